#include "driver/pass_manager.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "autograd/explain.h"
#include "codegen/print_kernel_ir.h"
#include "ops/printer.h"
#include "ops/verify.h"
#include "support/diagnostics.h"

namespace tg {

long peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;  // Linux reports KB
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

namespace {

// A pass's listing, written as a new file or over one (never through a symbolic link); a file
// that cannot be written is an error, not a listing silently missing.
void write_dump(const std::filesystem::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    ok = n > 0;
    done += ok ? size_t(n) : 0;
  }
  const int error = errno;
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  if (!ok) throw UserError("thunder-gen", "--dump-dir", "cannot write " + path.string() + ": " + std::strerror(error));
}

// Passes that only add tags (overrides: each tag checked as it is applied) or only drop ops no
// value needs (dead-code) leave nothing the verifier checks changed: not verified again, which at
// 10,000 ops was two of eleven full verifications.
bool changes_structure(Pass pass) { return pass != Pass::overrides && pass != Pass::dead_code; }

std::string ops_change(size_t in_ops, size_t out_ops) { return std::to_string(in_ops) + " ops -> " + std::to_string(out_ops) + " ops"; }

}  // namespace

template <class MakeListing>
void PassManager::stop_if_asked(Pass pass, MakeListing&& listing) {
  if (!stops_after(pass)) return;
  const bool kernels_follow = pass == Pass::partition && options_.kernel_times;
  if (may_throw_ && !kernels_follow) throw Stopped{listing()};
  stopped_ = listing();
}

PassManager::PassManager(const PassOptions& options, std::ostream& log) : options_(options), log_(log) {
  std::error_code error;
  const std::string& dir = options_.dump_dir;
  if (!dir.empty() && !std::filesystem::create_directories(dir, error) && !std::filesystem::is_directory(dir))
    throw UserError("thunder-gen", "--dump-dir " + dir, "cannot create the folder" + (error ? ": " + error.message() : ""));
}

void PassManager::finish_read(const Trace& t) {
  dump(pass_name(Pass::read), t);
  stop_if_asked(Pass::read, [&] { return print_trace(t); });
}

Trace PassManager::unchanged(Pass pass, Trace t) {
  log_line(pass, "nothing to do", Clock::now());
  dump(pass_name(pass), t);
  stop_if_asked(pass, [&] { return print_trace(t); });
  return t;
}

void PassManager::skip(Pass pass, const std::string& listing) {
  stop_if_asked(pass, [&] { return listing; });
}

void PassManager::verify(const Trace& t, Pass pass) { verify_pass(t, pass_name(pass)); }

PassManager PassManager::fork(std::ostringstream& buffer, int passes, std::string role) {
  PassManager child(options_, buffer);
  child.next_dump_ = next_dump_;
  child.role_ = std::move(role);
  child.may_throw_ = false;
  next_dump_ += passes;
  return child;
}

void PassManager::finish(Pass pass, size_t in_ops, const Trace& out, Clock::time_point start) {
  if (changes_structure(pass)) verify(out, pass);
  log_line(pass, ops_change(in_ops, out.ops.size()), start);
  dump(pass_name(pass), out);
  stop_if_asked(pass, [&] { return print_trace(out); });
}

// A fused trace's listing has each kernel's plan under it.
void PassManager::finish(Pass pass, size_t in_ops, const FusedTrace& out, Clock::time_point start) {
  verify(out.trace, pass);
  log_line(pass, ops_change(in_ops, out.trace.ops.size()), start);
  if (!options_.dump_dir.empty()) dump(pass_name(pass), print_fused(out));
  stop_if_asked(pass, [&] { return print_fused(out); });
}

void PassManager::finish(Pass pass, size_t, const KernelProgram& out, Clock::time_point start) {
  log_line(pass, std::to_string(out.kernels.size()) + " " + role_ + (role_.empty() ? "" : " ") + "kernels lowered", start);
  if (!options_.dump_dir.empty()) dump(pass_name(pass), print_kernel_program(out));
  stop_if_asked(pass, [&] { return print_kernel_program(out); });
}

// A joint trace's listing marks its cotangents and its backward part, so it reads back as one.
void PassManager::finish(Pass pass, size_t in_ops, const JointTrace& out, Clock::time_point start) {
  verify(out.trace, pass);
  log_line(pass, ops_change(in_ops, out.trace.ops.size()), start);
  const JointMarks marks{out.forward_inputs, out.forward_ops};
  if (!options_.dump_dir.empty()) dump(pass_name(pass), print_joint_trace(out.trace, marks));
  stop_if_asked(pass, [&] { return print_joint_trace(out.trace, marks); });
}

// The two traces are verified by the threads that lower them (verify()), side by side.
void PassManager::finish(Pass pass, size_t, const Partition& out, Clock::time_point start) {
  log_line(pass, std::to_string(out.forward.ops.size()) + " forward ops, " + std::to_string(out.backward.ops.size()) + " backward ops, " +
                     std::to_string(out.saved.size()) + " saved values",
           start);
  dump(std::string(pass_name(pass)) + "-forward", out.forward);
  dump(std::string(pass_name(pass)) + "-backward", out.backward);
  if (stops_after(pass)) {
    verify(out.forward, pass);
    verify(out.backward, pass);
    stop_if_asked(pass, [&] { return explain_partition(out, options_.input_file, options_.plan_listing); });
  }
}

void PassManager::finish(Pass pass, size_t, const CudaFile& out, Clock::time_point start) {
  log_line(pass, std::to_string(out.kernels.size()) + " " + role_ + (role_.empty() ? "" : " ") + "kernels", start);
  stop_if_asked(pass, [&] { return out.text; });
}

void PassManager::log_line(Pass pass, const std::string& what, Clock::time_point start) {
  if (!options_.verbose) return;
  const double ms = ms_since(start);
  log_ << "thunder-gen: " << pass_name(pass) << ": " << what << " (" << ms << " ms, peak RSS " << peak_rss_mb() << " MB)\n";
}

void PassManager::dump(std::string_view name, const Trace& t) {
  if (!options_.dump_dir.empty()) dump(name, print_trace(t));
}

void PassManager::dump(std::string_view name, const std::string& listing) {
  if (options_.dump_dir.empty()) return;
  char prefix[8];
  std::snprintf(prefix, sizeof prefix, "%02d-", next_dump_++);
  const std::string file = prefix + (role_.empty() ? "" : role_ + "-") + std::string(name) + ".txt";
  write_dump(std::filesystem::path(options_.dump_dir) / file, listing);
}


}  // namespace tg
