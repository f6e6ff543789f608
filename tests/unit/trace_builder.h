// Small helpers for writing test traces as JSON text.
#pragma once
#include <string>

namespace test {

// A tensor declaration.
inline std::string tensor(const std::string& name, const std::string& shape, const std::string& dtype = "f32") {
  return "{\"name\": \"" + name + "\", \"shape\": " + shape + ", \"dtype\": \"" + dtype + "\"}";
}

// An op: {"op": id, "args": args, "out": [outs]} plus optional extra fields (",\"kwargs\": {...}").
inline std::string op(const std::string& id, const std::string& args, const std::string& outs, const std::string& extra = "") {
  return "{\"op\": \"" + id + "\", \"args\": " + args + ", \"out\": [" + outs + "]" + extra + "}";
}

inline std::string trace(const std::string& name, const std::string& inputs, const std::string& ops, const std::string& outputs) {
  return "{\"format\": \"thunder-gen-trace\", \"version\": 1, \"name\": \"" + name + "\", \"inputs\": [" + inputs + "], \"ops\": [" + ops +
         "], \"outputs\": [" + outputs + "]}";
}

// softmax over rows of `columns` of x [8, columns], as Thunder decomposes it: y = exp(x - max) / sum(exp(x - max)).
inline std::string softmax_trace(int columns = 32) {
  const std::string row = "[8, " + std::to_string(columns) + "]";
  std::string ops = op("prims.amax", "[\"x\", [1]]", tensor("m", "[8]")) + "," +
                    op("prims.broadcast_in_dim", "[\"m\", " + row + ", [0]]", tensor("mb", row)) + "," +
                    op("prims.sub", "[\"x\", \"mb\"]", tensor("d", row)) + "," + op("prims.exp", "[\"d\"]", tensor("e", row)) + "," +
                    op("prims.sum", "[\"e\", [1]]", tensor("s", "[8]")) + "," +
                    op("prims.broadcast_in_dim", "[\"s\", " + row + ", [0]]", tensor("sb", row)) + "," +
                    op("prims.div", "[\"e\", \"sb\"]", tensor("y", row));
  return trace("softmax", tensor("x", row), ops, "\"y\"");
}

// How many times `what` occurs in `text` (overlapping occurrences too).
inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// `text` with each run of spaces and newlines one space: generated code as a C++ compiler reads it,
// whatever lines it was wrapped into.
inline std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != ' ' && c != '\n') out += c;
    else if (!out.empty() && out.back() != ' ') out += ' ';
  }
  return out;
}

}  // namespace test
