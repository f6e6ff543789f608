// The pass manager: every pass of the pipeline (src/driver/pipeline.cpp) runs through it, and it does
// for each what none of them does itself: times it (-v, one line per pass), verifies what it
// returns, writes its listing (--dump-dir, numbered in pipeline order), and ends the pipeline
// after the pass --emit names, with that pass's listing.
#pragma once
#include <chrono>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/explain.h"
#include "autograd/partition.h"
#include "autograd/time_model.h"
#include "codegen/emit_cuda.h"
#include "codegen/kernel_program.h"
#include "ir/passes.h"
#include "ir/trace.h"
#include "schedule/kernel_plan.h"

namespace tg {

struct PassOptions {
  std::string input_file = "trace.json";  // as the partition's explanation names it
  bool verbose = false;
  std::string dump_dir;              // write each pass's listing here when not empty
  std::optional<Pass> stop_after;    // --emit: end after this pass, with its listing
  PlanListing plan_listing = PlanListing::plan;  // what the partition's listing shows (explain)
  // explain and --emit plan: after the plan, the kernels it makes, predicted on this device. The
  // pipeline writes them, so the partition's stop keeps its listing (stopped()) instead of ending the run.
  std::optional<DeviceModel> kernel_times;
};

class PassManager {
 public:
  // Thrown after the pass --emit names; the pipeline returns `listing`.
  struct Stopped {
    std::string listing;
  };

  PassManager(const PassOptions& options, std::ostream& log);

  // Runs `pass` on `in` (moved in when given as an rvalue) and finishes it: log, verification,
  // listing, and the stop --emit asks for.
  template <class F, class In>
  auto run(Pass pass, F&& f, In&& in) {
    const auto start = std::chrono::steady_clock::now();
    const size_t in_ops = ops_of(in);
    auto out = f(std::forward<In>(in));
    finish(pass, in_ops, out, start);
    return out;
  }

  // The trace as the reader returned it: listed as pass `read`.
  void finish_read(const Trace& t);
  // A pass with nothing to do on `t` (no draw to bind): logged, listed and stopped after like one
  // that ran, and not verified again, since `t` is the verified trace the pass was given.
  Trace unchanged(Pass pass, Trace t);
  // A pass this trace does not need (autograd with nothing to train): --emit naming it still gets
  // `listing`.
  void skip(Pass pass, const std::string& listing);
  // The checks of a trace the pass `pass` made, for a caller that runs them elsewhere (a thread).
  static void verify(const Trace& t, Pass pass);

  // A manager for passes run on another thread for one `role` ("forward", "backward"): its log
  // lines wait in `buffer`, its listings take this manager's next `passes` numbers and the role
  // in their names, and instead of stopping it keeps the listing --emit asks for (stopped()).
  PassManager fork(std::ostringstream& buffer, int passes, std::string role);
  const std::optional<std::string>& stopped() const { return stopped_; }
  bool stops_after(Pass pass) const { return options_.stop_after == pass; }

 private:
  using Clock = std::chrono::steady_clock;

  static size_t ops_of(const Trace& t) { return t.ops.size(); }
  static size_t ops_of(const JointTrace& j) { return j.trace.ops.size(); }
  static size_t ops_of(const FusedTrace& f) { return f.trace.ops.size(); }
  static size_t ops_of(const KernelProgram& p) { return p.ops.size(); }

  void finish(Pass pass, size_t in_ops, const Trace& out, Clock::time_point start);
  void finish(Pass pass, size_t in_ops, const FusedTrace& out, Clock::time_point start);
  void finish(Pass pass, size_t in_ops, const KernelProgram& out, Clock::time_point start);
  void finish(Pass pass, size_t in_ops, const JointTrace& out, Clock::time_point start);
  void finish(Pass pass, size_t in_ops, const Partition& out, Clock::time_point start);
  void finish(Pass pass, size_t in_ops, const CudaFile& out, Clock::time_point start);

  void log_line(Pass pass, const std::string& what, Clock::time_point start);
  void dump(std::string_view name, const Trace& t);
  void dump(std::string_view name, const std::string& listing);
  template <class MakeListing>
  void stop_if_asked(Pass pass, MakeListing&& listing);  // (made only when it stops)

  const PassOptions& options_;
  std::ostream& log_;
  int next_dump_ = 0;
  std::string role_;                      // of a fork: "forward" or "backward"
  bool may_throw_ = true;                 // forks keep the listing instead (stopped_)
  std::optional<std::string> stopped_;
};

}  // namespace tg
