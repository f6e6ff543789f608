// thunder-gen-check TRACE DIR: runs TRACE on LibTorch with the inputs a harness wrote to DIR and
// compares every output the harness wrote there. Prints one line per output; exits 0 when all
// match within the tolerance table, 1 otherwise.
#include <cstdio>
#include <iostream>

#include "compare.h"
#include "npy.h"
#include "printer.h"
#include "reader.h"
#include "reference.h"
#include "thunder_gen/diagnostics.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: thunder-gen-check trace.json DIR\n";
    return 2;
  }
  try {
    tg::Trace trace = tg::read_trace_file(argv[1]);
    const std::string dir = argv[2];
    std::vector<torch::Tensor> inputs;
    for (tg::ValueId id : trace.inputs) inputs.push_back(tg::read_npy(dir + "/" + trace.value(id).name + ".npy", trace.value(id).dtype));
    std::vector<torch::Tensor> expected = tg::run_reference(trace, inputs);
    int failures = 0;
    for (size_t i = 0; i < trace.outputs.size(); ++i) {
      const tg::Value& v = trace.value(trace.outputs[i]);
      torch::Tensor actual = tg::read_npy(dir + "/" + v.name + ".npy", v.dtype);
      tg::Comparison c = tg::compare(actual, expected[i], v.dtype);
      tg::Tolerance tol = tg::tolerance_for(v.dtype);
      std::printf("%s: %s %s: %s (atol %g, rtol %g): %s\n", trace.name.c_str(), v.name.c_str(), tg::print_type(v).c_str(), c.summary().c_str(),
                  tol.atol, tol.rtol, c.ok ? "ok" : "MISMATCH");
      if (!c.ok && c.first_mismatch >= 0)
        std::printf("  first mismatch at flat index %lld: generated %.9g, LibTorch %.9g\n", (long long)c.first_mismatch,
                    actual.flatten()[c.first_mismatch].item<double>(), expected[i].flatten()[c.first_mismatch].item<double>());
      failures += !c.ok;
    }
    std::printf("%s: %zu of %zu outputs match LibTorch\n", trace.name.c_str(), trace.outputs.size() - failures, trace.outputs.size());
    return failures ? 1 : 0;
  } catch (const tg::UserError& e) {
    std::cerr << argv[1] << ": " << e.where << ": error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "thunder-gen-check: " << e.what() << "\n";
    return 1;
  }
}
