// RNG binding: a torch.nn.functional.dropout call (or an attention with dropout_p above 0) in a
// Thunder trace names no random state, but
// generated code must draw reproducibly (the same seed and offset give the same mask in host
// emulation and on the GPU). This pass adds two i64 scalar inputs to a trace that has such
// calls, `philox_seed` and `philox_offset` (the harness's --philox-seed / --philox-offset), and
// binds every unbound dropout to them, each call with its own Philox stream (0, 1, ...); a
// prims.uniform (Thunder's stateful draw, as in dropout's decomposition) becomes a
// prims.uniform_philox on the same inputs with a stream of its own. The
// generator and the checker both run it, so they agree on the inputs.
#pragma once
#include <cstddef>

#include "ir/trace.h"

namespace tg {

Trace bind_rng(Trace trace);
// Does the trace draw without a bound seed (what bind_rng binds)? Without such a draw the pass
// returns the trace as it is.
bool has_unbound_draws(const Trace& trace);

// Where an op that can draw keeps its Philox seed (the offset and the stream follow), or 0:
// prims.uniform_philox, torch.nn.functional.dropout, scaled_dot_product_attention,
// multi_head_attention_forward.
size_t philox_seed_param(const Op& op);

}  // namespace tg
