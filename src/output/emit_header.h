// Emit the public header, include/<trace>.h: plain C (and C++), needing no CUDA or runtime header,
// that declares the entry points with every argument documented (trace name, dtype, shape, role),
// the workspace size and the status codes. And the definitions of the two functions it declares
// besides the entry points, which forward.cu ends with.
#pragma once
#include <optional>
#include <string>

#include "codegen/emit_cuda.h"
#include "codegen/entry_points.h"
#include "output/emit_sizes.h"
#include "ir/trace.h"

namespace tg {

// `run_forward` / `run_backward`: the traces the entry points run (for the arguments' types);
// `sizes`: a symbolic trace's size binding, declared after them.
std::string emit_header(const std::string& trace_name, const std::string& input_file, const Trace& run_forward, const EntryPoint& forward,
                        const Trace* run_backward, const EntryPoint* backward, const SizeBinding* sizes);

// <trace>_workspace_bytes() (enough for the forward and the backward; in a folder taking its sizes
// at run time, <trace>_workspace_bytes(sizes), at those sizes) and <trace>_status_string().
std::string emit_api_functions(const Trace& t, const CudaFile& forward, const CudaFile* backward);

}  // namespace tg
