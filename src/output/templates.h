// The runtime headers from templates/, compiled in (see cmake/embed_templates.cmake).
#pragma once
#include <string_view>
#include <utility>
#include <vector>

namespace tg {
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_templates();
}
