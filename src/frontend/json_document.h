// A trace's text as a JSON document (simdjson's DOM), or a UserError at the line and column of
// what is wrong: a syntax error, nesting deeper than kMaxDepth, an integer beyond 64 bits; and the
// check that no object repeats a key. Internal to frontend/ (the JSON reader).
#pragma once
#include <simdjson.h>

#include "frontend/json_element.h"

namespace tg::json {

// The document `padded` holds, parsed by `parser` (which owns it). Deeply nested input is refused
// rather than recursed into.
Json parse_document(simdjson::dom::parser& parser, const simdjson::padded_string& padded);

// Refuses a key an object repeats (a JSON library keeps one of the two silently), at the first
// repetition in document order, naming its place.
void check_duplicate_keys(Json document);

}  // namespace tg::json
