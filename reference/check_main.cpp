// thunder-gen-check TRACE DIR [--op-by-op]: runs TRACE on LibTorch with the inputs a harness wrote to DIR and
// compares every output the harness wrote there, and, when the trace trains, every grad_<input>
// with LibTorch autograd's gradient for the cotangents the harness wrote. Prints one line per output; exits 0 when all
// match within the tolerance table, 1 otherwise.
#include <c10/util/Exception.h>

#include <cstdio>
#include <iostream>

#include "compare.h"
#include "emit_harness.h"
#include "npy.h"
#include "printer.h"
#include "reader.h"
#include "reference.h"
#include "rng.h"
#include "thunder_gen/diagnostics.h"

int main(int argc, char** argv) {
  const bool op_by_op = argc == 4 && std::string(argv[3]) == "--op-by-op";
  if (argc != 3 && !op_by_op) {
    std::cerr << "usage: thunder-gen-check trace.json DIR [--op-by-op]\n";
    return 2;
  }
  try {
    // The generator's RNG binding, so the Philox seed and offset inputs the harness wrote are read.
    tg::Trace trace = tg::bind_rng(tg::read_trace_file(argv[1]));
    const std::string dir = argv[2];
    std::vector<torch::Tensor> inputs, cotangents;
    bool trains = false;
    for (tg::ValueId id : trace.inputs) trains = trains || trace.value(id).requires_grad;
    // The files the harness wrote (a name that would collide or is too long has another file).
    const tg::HarnessFiles files = tg::harness_files(trace, trains);
    // Each file holds exactly its value's dtype and shape (a scalar: shape ()).
    auto read = [&](const std::string& stem, const tg::Value& v) { return tg::read_npy(dir + "/" + stem + ".npy", v.dtype, v.shape); };
    for (size_t i = 0; i < trace.inputs.size(); ++i) inputs.push_back(read(files.inputs[i], trace.value(trace.inputs[i])));
    if (trains)
      for (size_t i = 0; i < trace.outputs.size(); ++i) cotangents.push_back(read(files.cotangents[i], trace.value(trace.outputs[i])));
    // The truth is computed in f64 (Precision::wide): the tolerance then bounds the generated code's
    // error alone, not the sum of two f32 computations' errors. --op-by-op: PyTorch's eager
    // semantics instead, every 16-bit result rounded to its dtype (the tolerance table must cover
    // the difference: docs/design-notes.md, "Rounding").
    const tg::Precision wide = op_by_op ? tg::Precision::op_by_op : tg::Precision::wide;
    tg::ReferenceGradients expected =
        trains ? tg::reference_gradients(trace, inputs, cotangents, wide) : tg::ReferenceGradients{tg::run_reference(trace, inputs, wide), {}};

    int failures = 0, checked = 0;
    auto check = [&](const std::string& name, const std::string& stem, const tg::Value& v, const torch::Tensor& want) {
      torch::Tensor actual = read(stem, v);
      tg::Comparison c = tg::compare(actual, want, v.dtype);
      tg::Tolerance tol = tg::tolerance_for(v.dtype);
      std::printf("%s: %s %s: %s (atol %g, rtol %g): %s\n", trace.name.c_str(), name.c_str(), tg::print_type(v).c_str(), c.summary().c_str(), tol.atol,
                  tol.rtol, c.ok ? "ok" : "MISMATCH");
      if (!c.ok && c.first_mismatch >= 0)
        std::printf("  first mismatch at flat index %lld: generated %.9g, LibTorch %.9g\n", (long long)c.first_mismatch,
                    actual.flatten()[c.first_mismatch].item<double>(), want.flatten()[c.first_mismatch].item<double>());
      failures += !c.ok;
      ++checked;
    };
    for (size_t i = 0; i < trace.outputs.size(); ++i) {
      const tg::Value& v = trace.value(trace.outputs[i]);
      check(v.name, files.outputs[i], v, expected.outputs[i]);
    }
    size_t k = 0;
    for (size_t i = 0; i < trace.inputs.size(); ++i) {
      const tg::Value& v = trace.value(trace.inputs[i]);
      if (!v.requires_grad) continue;
      check("grad_" + v.name, files.gradients[i], v, expected.gradients.at(k++));
    }
    std::printf("%s: %d of %d %s match LibTorch\n", trace.name.c_str(), checked - failures, checked, trains ? "outputs and gradients" : "outputs");
    return failures ? 1 : 0;
  } catch (const tg::UserError& e) {
    std::cerr << argv[1] << ": " << e.where << ": error: " << e.what() << "\n";
    return 1;
  } catch (const c10::Error& e) {  // LibTorch refusing the inputs (a class index out of range): its message, not its backtrace
    std::cerr << "thunder-gen-check: LibTorch: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "thunder-gen-check: " << e.what() << "\n";
    return 1;
  }
}
