// The generated entry points' parameters, in one place: their order, C names and types, and what
// each is for. The public header (<trace>.h), the definitions in forward.cu and backward.cu, the
// harness and the manifest all read them from here, so they cannot disagree.
//
//   int <trace>_forward(inputs..., outputs..., saved intermediates..., void* workspace, stream)
//   int <trace>_backward(saved..., cotangents..., gradients..., void* workspace, stream)
// A distributed trace's take the communicator before the workspace: (..., thunder_gen_comm comm,
// void* workspace, stream); a folder's that takes its sizes at run time, the sizes:
// (..., const int64_t* sizes, void* workspace, stream).
//
// Parameters are named after the trace's value: <name> where usable_as_parameter allows it, else
// g_<name> (src/support/generated_text.h, Role::global). A value thunder-gen made that the caller must
// keep between the calls (a saved row statistic, a packed mask: named <call>__<n> inside) is named
// after the call it comes from and the prim that makes it, <call>_<prim> (t13_var, t0_lt); the
// manifest maps each to its value.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "autograd/partition.h"
#include "ir/trace.h"

namespace tg {

struct EntryParam {
  ValueId value;             // in the trace the entry point runs (the forward or backward trace)
  std::string name;          // the C parameter: <name> or g_<name>, or out<k> for an output listed before
  std::string c_type;        // as the header declares it: "const float*", "uint16_t*", "double"
  bool writes = false;       // the entry point writes it (an output, a saved value, a gradient)
  std::string role;          // for people: "input x (requires grad)", "cotangent of t5", ...
  std::string value_name;    // the value's name in the trace the entry point runs
  // For programs (the manifest): input, output, saved, cotangent or gradient, and of which trace
  // input or output (a saved value: its own name).
  std::string kind, of;
};

struct EntryPoint {
  std::string name;  // <trace>_forward, <trace>_backward
  std::string header;  // include/<trace>.h, which declares it
  std::vector<EntryParam> params;
  // A distributed trace's: the communicator (thunder_gen_comm) comes after the parameters, before
  // the workspace. Both entry points of such a trace take it.
  bool takes_comm = false;
  // A folder taking its sizes at run time: `const int64_t* sizes` (what <trace>_bind_sizes wrote,
  // a size per symbol) comes after the parameters and the communicator, before the workspace.
  bool takes_sizes = false;
};

// The public names of the values thunder-gen made that the forward saves for the backward, by
// value; empty when the trace does not train.
std::map<ValueId, std::string> saved_param_names(const Partition* training);

// `run` is the trace the entry point runs: the forward (input trace when nothing trains, or the
// partition's forward) or the partition's backward.
EntryPoint forward_entry(const Trace& run, const Partition* training, const std::string& trace_name);
EntryPoint backward_entry(const Partition& training, const std::string& trace_name);

// The C type a parameter has in the header for value v: pointers to storage types (16-bit floats
// as uint16_t bits, packed masks as uint32_t words), scalars by value.
std::string c_param_type(const Value& v, bool writes);

}  // namespace tg
