// "Did you mean ...?": the known word closest to a misspelt one, for diagnostics.
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace tg {

// The edit distance (insertions, deletions, substitutions) between a and b.
size_t edit_distance(std::string_view a, std::string_view b);
// The word of `known` closest to `word` (the first of the closest); `known` must not be empty.
std::string_view closest_word(std::string_view word, std::span<const std::string_view> known);

}  // namespace tg
