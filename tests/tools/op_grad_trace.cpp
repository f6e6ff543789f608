// op-grad-trace DTYPE DIR: writes DIR/op_grads_<DTYPE>.json, one trace holding the gradient test
// case of every differentiable op in the op table (tests/reference/grad_cases.h) in DTYPE, each
// case's values prefixed with its op ("sin__x"); its inputs, drawn
// from each case's domain, as DIR/inputs/<name>.npy; and DIR/ops.txt, a line per op table row:
// "<id> <prefix>" for the ops in the trace, "<id> -" for ops with no gradient.
// The harness run on it and thunder-gen-check then compare every op's gradient through generated
// code with LibTorch autograd; tests/op_grad_result.sh reads one op's lines.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "grad_cases.h"
#include "ops/op_table.h"

using json = nlohmann::ordered_json;

namespace {

// Renames a case's local values (every string equal to a declared name) and sets its float dtype.
void localize(json& j, const std::set<std::string>& names, const std::string& prefix, const std::string& dtype) {
  if (j.is_string()) {
    if (names.count(j.get<std::string>())) j = prefix + j.get<std::string>();
    return;
  }
  if (j.is_object()) {
    for (auto& [key, value] : j.items()) {
      if (key == "dtype" && value.is_string() && value == "f64") value = dtype;
      else localize(value, names, prefix, dtype);
    }
    return;
  }
  if (j.is_array())
    for (json& item : j) localize(item, names, prefix, dtype);
}

uint16_t to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);  // round to nearest even (inputs are finite)
}

void write_npy(const std::string& path, const std::vector<double>& values, const std::vector<int64_t>& shape, const std::string& dtype) {
  std::string shape_text;
  for (size_t i = 0; i < shape.size(); ++i) shape_text += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) shape_text += ",";
  const char* descr = dtype == "f32" ? "<f4" : dtype == "f64" ? "<f8" : "<u2";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + shape_text + "), }";
  header += std::string((64 - (11 + header.size()) % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(char(header.size() & 0xff)).put(char(header.size() >> 8));
  out << header;
  for (double v : values) {
    if (dtype == "f32") { float f = float(v); out.write(reinterpret_cast<const char*>(&f), 4); }
    else if (dtype == "f64") out.write(reinterpret_cast<const char*>(&v), 8);
    else { uint16_t b = to_bf16_bits(float(v)); out.write(reinterpret_cast<const char*>(&b), 2); }
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

// Each case's inputs come from a generator seeded by its op's id, so an op added to the table, or
// one moved, leaves the other cases' inputs as they were.
uint64_t seed_of(std::string_view id) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : id) h = (h ^ uint64_t(static_cast<unsigned char>(c))) * 1099511628211ull;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "f32" && std::string(argv[1]) != "bf16" && std::string(argv[1]) != "f64")) {
    std::cerr << "usage: op-grad-trace f32|bf16|f64 DIR\n";
    return 2;
  }
  const std::string dtype = argv[1], dir = argv[2];
  json trace = {{"format", "thunder-gen-trace"}, {"version", 1}, {"name", "op_grads_" + dtype},
                {"source", "tests/tools/op_grad_trace.cpp: every differentiable op's gradient case, in " + dtype}};
  trace["inputs"] = json::array();
  trace["ops"] = json::array();
  trace["outputs"] = json::array();
  std::ofstream ops_list(dir + "/ops.txt");
  for (const tg::OpInfo& info : tg::op_table()) {
    std::optional<test::Case> c = test::case_for(info);
    if (!c) {
      ops_list << info.id << " -\n";
      continue;
    }
    // "sin__", "torch_gelu__": an identifier, distinct for prims.sum and torch.sum.
    std::string prefix = std::string(info.id.rfind("torch.", 0) == 0 ? "torch_" : "") + std::string(info.id.substr(info.id.rfind('.') + 1)) + "__";
    ops_list << info.id << " " << prefix << "\n";
    json inputs = json::parse("[" + c->inputs + "]"), ops = json::parse("[" + c->op + "]"), outputs = json::parse("[" + c->outputs + "]");
    std::set<std::string> names;
    for (const json& d : inputs) names.insert(d["name"]);
    for (const json& op : ops)
      for (const json& d : op["out"]) names.insert(d["name"]);
    localize(inputs, names, prefix, dtype);
    localize(ops, names, prefix, dtype);
    localize(outputs, names, prefix, dtype);
    std::mt19937_64 rng(seed_of(info.id));
    for (json& d : inputs) {
      std::vector<int64_t> shape = d["shape"];
      int64_t n = 1;
      for (int64_t s : shape) n *= s;
      std::uniform_real_distribution<double> draw(c->lo, c->hi);
      std::vector<double> values(static_cast<size_t>(n));
      for (double& v : values) v = draw(rng);
      write_npy(dir + "/inputs/" + d["name"].get<std::string>() + ".npy", values, shape, dtype);
      trace["inputs"].push_back(d);
    }
    for (json& op : ops) trace["ops"].push_back(op);
    for (json& o : outputs) trace["outputs"].push_back(o);
  }
  std::ofstream(dir + "/op_grads_" + dtype + ".json") << trace.dump(1) << "\n";
  return 0;
}
