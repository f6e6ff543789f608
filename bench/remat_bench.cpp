// remat_bench: what rematerialization saves, against simpler rules, and how long planning takes.
// Not a test: it prints numbers (see docs/performance.md, "Saved-for-backward bytes").
//   remat_bench EXAMPLES_DIR            the composite models: saved bytes under thunder-gen's plan,
//                                       under "save every forward value the backward reads", and
//                                       under Thunder's weights (element size per tensor)
//   remat_bench --synthetic N [N...]    plan a synthetic forward of N ops (autograd + partition)
//   remat_bench --write-synthetic N F   write that trace to F (to time the whole generator on it)
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/partition.h"
#include "frontend/reader.h"
#include "lower/decompose.h"
#include "lower/rng.h"

namespace {

struct Totals {
  int64_t all = 0, activations = 0;
  size_t recomputed = 0;
};

Totals totals(const tg::Partition& p) {
  Totals t;
  for (const tg::SavedValue& s : p.saved) {
    int64_t bytes = tg::stored_bytes(p.backward.value(s.value));
    t.all += bytes;
    if (s.kind == tg::SavedValue::Kind::intermediate) t.activations += bytes;
  }
  t.recomputed = p.recomputed.size();
  return t;
}

tg::JointTrace joint_of(const tg::Trace& t) { return tg::autograd(tg::decompose(tg::bind_rng(t), true)); }

void models(const std::string& dir) {
  const char* names[] = {"gpt2_mlp", "attention_block", "llama_mlp", "classifier_head", "exp_chain_matmul", "dropout_p09"};
  std::printf("%-18s %34s %34s %34s\n", "model", "thunder-gen: saved (activations)", "save all read: saved (activations)",
              "Thunder weights: saved (activations)");
  for (const char* name : names) {
    tg::JointTrace joint = joint_of(tg::read_trace_file(dir + "/" + name + ".json"));
    tg::RematOptions ours, all_read, thunder;
    all_read.baseline = tg::RematOptions::Baseline::save_all_read;
    thunder.baseline = tg::RematOptions::Baseline::thunder_weights;
    Totals a = totals(tg::partition(joint, ours)), b = totals(tg::partition(joint, all_read)), c = totals(tg::partition(joint, thunder));
    auto cell = [](const Totals& t) {
      char s[64];
      std::snprintf(s, sizeof s, "%12lld (%12lld)", (long long)t.all, (long long)t.activations);
      return std::string(s);
    };
    std::printf("%-18s %34s %34s %34s\n", name, cell(a).c_str(), cell(b).c_str(), cell(c).c_str());
  }
}

// A forward of n ops over f32[32, 32]: mostly elementwise ops on recent values, some matmuls
// with a weight and row sums broadcast back, the shape of a deep network's forward.
std::string synthetic_trace(int n) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::string T = "\"shape\": [32, 32], \"dtype\": \"f32\"";
  std::string ops;
  std::vector<std::string> values = {"x"};
  auto recent = [&] { return values[size_t(std::max(0, int(values.size()) - 1 - pick(0, 7)))]; };
  const char* unary[] = {"prims.exp", "prims.tanh", "prims.neg", "prims.sin", "prims.abs"};
  for (int i = 0; i < n; ++i) {
    std::string out = "v" + std::to_string(i), op;
    int kind = pick(0, 99);
    if (kind < 65) op = "{\"op\": \"" + std::string(unary[pick(0, 4)]) + "\", \"args\": [\"" + recent() + "\"]";
    else if (kind < 90) op = "{\"op\": \"prims." + std::string(pick(0, 1) ? "add" : "mul") + "\", \"args\": [\"" + recent() + "\", \"" + recent() + "\"]";
    else if (kind < 95) op = "{\"op\": \"prims.matmul\", \"args\": [\"" + recent() + "\", \"w\"]";
    else {
      std::string s = "s" + std::to_string(i);
      ops += "{\"op\": \"prims.sum\", \"args\": [\"" + recent() + "\", [1]], \"out\": [{\"name\": \"" + s + "\", \"shape\": [32], \"dtype\": \"f32\"}]},\n";
      op = "{\"op\": \"prims.broadcast_in_dim\", \"args\": [\"" + s + "\", [32, 32], [0]]";
    }
    ops += op + ", \"out\": [{\"name\": \"" + out + "\", " + T + "}]}" + (i + 1 < n ? ",\n" : "\n");
    values.push_back(out);
  }
  return "{\"format\": \"thunder-gen-trace\", \"version\": 1, \"name\": \"synthetic\", \"inputs\": [{\"name\": \"x\", " + T +
         ", \"requires_grad\": true}, {\"name\": \"w\", " + T + ", \"requires_grad\": true}], \"ops\": [\n" + ops + "], \"outputs\": [\"" +
         values.back() + "\"]}";
}

void synthetic(int n) {
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  tg::Trace t = tg::read_trace(synthetic_trace(n));
  auto t0 = clock::now();
  tg::JointTrace joint = tg::autograd(t);
  auto t1 = clock::now();
  tg::Partition p = tg::partition(joint);
  auto t2 = clock::now();
  Totals s = totals(p);
  std::printf("synthetic %7d forward ops (%7zu joint ops): autograd %8.1f ms, plan (min-cut + partition) %8.1f ms; saved %zu values, "
              "%lld bytes; %zu recomputed\n",
              n, joint.trace.ops.size(), ms(t0, t1), ms(t1, t2), p.saved.size(), (long long)s.all, s.recomputed);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--write-synthetic") {  // the trace itself, for thunder-gen -v
    std::FILE* f = std::fopen(argv[3], "w");
    if (!f) return 1;
    std::fputs(synthetic_trace(std::stoi(argv[2])).c_str(), f);
    return std::fclose(f) == 0 ? 0 : 1;
  }
  if (argc >= 3 && std::string(argv[1]) == "--synthetic") {
    for (int i = 2; i < argc; ++i) synthetic(std::stoi(argv[i]));
    return 0;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: remat_bench EXAMPLES_DIR | remat_bench --synthetic N...\n");
    return 2;
  }
  models(argv[1]);
  return 0;
}
