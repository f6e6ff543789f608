#include "autograd/time_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ops/op_table.h"
#include "support/diagnostics.h"

namespace tg {

namespace {

int64_t femtoseconds(double seconds) {
  const double fs = std::ceil(seconds * kFemtoseconds);
  return fs >= double(kMostFs) ? kMostFs : int64_t(fs);
}

// A number in [least, most] at `pointer`, or a UserError naming it and the range.
double in_range(const nlohmann::json& doc, const std::string& pointer, const std::string& file, double least, double most) {
  const nlohmann::json::json_pointer at(pointer);
  if (!doc.contains(at)) throw UserError(file, pointer, "missing: the device description needs it");
  const nlohmann::json& v = doc.at(at);
  if (!v.is_number() || !(v.get<double>() >= least && v.get<double>() <= most)) {
    std::ostringstream range;
    range << "must be a number from " << least << " to " << most << ", not " << v.dump().substr(0, 40);
    throw UserError(file, pointer, range.str());
  }
  return v.get<double>();
}

DeviceModel parse_device(const std::string& text, const std::string& file) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(file, "byte " + std::to_string(e.byte), "not JSON");
  } catch (const nlohmann::json::exception& e) {  // (a number past double's range, say)
    throw UserError(file, "", std::string("not a device description: ") + e.what());
  }
  if (!doc.is_object()) throw UserError(file, "", "a device description is a JSON object");
  DeviceModel d;
  if (!doc.contains("name") || !doc.at("name").is_string()) throw UserError(file, "/name", "missing: a string naming the device");
  d.name = doc.at("name").get<std::string>();
  // (The name is printed in explain's reasons and the manifest: a word, nothing to escape.)
  const bool word = !d.name.empty() && d.name.size() <= 64 &&
                    std::all_of(d.name.begin(), d.name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; });
  if (!word) throw UserError(file, "/name", "a device's name is 1-64 letters, digits, '-', '_' or '.'");
  // (Ranges any real device falls in: a units slip is refused rather than saturating every cost.)
  d.copy_bytes_per_second = in_range(doc, "/copy_bytes_per_second", file, 1e9, 1e15);
  d.launch_seconds = in_range(doc, "/launch_seconds", file, 1e-8, 1e-3);
  for (const char* dtype : {"f32", "tf32", "bf16", "f16", "f64"})
    d.flops_per_second[dtype] = in_range(doc, std::string("/flops_per_second/") + dtype, file, 1e9, 1e18);
  return d;
}

// Arithmetic per element written by an elementwise op: a few flops (a transcendental is more,
// but nothing here is compute-bound at these counts).
constexpr double kFlopsPerElement = 4;
// A counter-based random draw: Philox's rounds per element.
constexpr double kFlopsPerDraw = 40;

int64_t elements(const Trace& t, ValueId v, const SymbolValues& at) { return numel_at(t.value(v).shape, at); }

// The GEMM time of a matmul op: 2*M*N*K flops at its dtype's peak. K is a's last dim, or its
// first when a is read transposed ([K, M] in memory: a weight gradient's g^T x).
int64_t gemm_fs(const Trace& t, const Op& op, const SymbolValues& at, const DeviceModel& device) {
  const Value& a = t.value(op.arg("a").value);
  const bool transposed = op.has_arg("transpose_a") && op.arg("transpose_a").boolean && a.shape.size() == 2;
  const double k = double(numel_at(Shape{transposed ? a.shape.front() : a.shape.back()}, at));
  return device.compute_fs(2 * double(elements(t, op.outs[0], at)) * k, a.dtype);
}

}  // namespace

int64_t arithmetic_fs(const Trace& t, const Op& op, const SymbolValues& at, const DeviceModel& device) {
  const DType dtype = op.outs.empty() ? DType::f32 : t.value(op.outs[0]).dtype;
  switch (op.info->fusion) {
    case FusionClass::shape: return 0;
    case FusionClass::source:
      if (op.info->kind != OpKind::uniform_philox) return 0;
      return device.compute_fs(kFlopsPerDraw * double(elements(t, op.outs[0], at)), DType::f32);
    case FusionClass::reduction: return device.compute_fs(double(elements(t, op.arg("a").value, at)), dtype);
    case FusionClass::library: return is_collective(op.info->kind) ? 0 : gemm_fs(t, op, at, device);
    default: {
      double n = 0;
      for (ValueId v : op.outs) n += double(elements(t, v, at));
      return device.compute_fs(kFlopsPerElement * n, dtype);
    }
  }
}

bool needs_own_kernel(const Op& op) {
  switch (op.info->fusion) {
    case FusionClass::source: return op.info->kind == OpKind::uniform_philox;
    case FusionClass::reduction: return true;
    case FusionClass::library: return !is_collective(op.info->kind);
    default: return false;
  }
}

int64_t recompute_fs(const Trace& t, const Op& op, const SymbolValues& at, const DeviceModel& device) {
  return capped_fs_sum(needs_own_kernel(op) ? device.launch_fs() : 0, arithmetic_fs(t, op, at, device));
}

int64_t fixed_step_fs(const Trace& joint, const SymbolValues& at, const DeviceModel& device) {
  int64_t fs = 2 * device.launch_fs();
  for (const Op& op : joint.ops) fs = capped_fs_sum(fs, recompute_fs(joint, op, at, device));
  auto moved = [&](ValueId v) {
    const Value& value = joint.value(v);
    return value.is_scalar ? 0 : device.move_fs(stored_bytes_at(value, false, at));
  };
  for (ValueId v : joint.inputs) fs = capped_fs_sum(fs, moved(v));
  for (ValueId v : joint.outputs) fs = capped_fs_sum(fs, moved(v));
  return fs;
}

int64_t capped_fs_sum(int64_t a, int64_t b) { return std::min(kMostFs * 1024, a + b); }

int64_t DeviceModel::move_fs(int64_t bytes) const { return femtoseconds(double(bytes) / copy_bytes_per_second); }

int64_t DeviceModel::compute_fs(double flops, DType dtype) const {
  const auto peak = flops_per_second.find(std::string(dtype_name(dtype)));
  return femtoseconds(flops / (peak != flops_per_second.end() ? peak->second : flops_per_second.at("f32")));
}

int64_t DeviceModel::launch_fs() const { return femtoseconds(launch_seconds); }

std::vector<std::string> device_model_names() {
  std::vector<std::string> names;
  for (const auto& [file, text] : embedded_device_models()) names.emplace_back(file.substr(0, file.size() - std::string_view(".json").size()));
  return names;
}

DeviceModel device_model(const std::string& name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  if (!is_path) {
    for (const auto& [file, text] : embedded_device_models())
      if (file == name_or_path + ".json") return parse_device(std::string(text), "devices/" + std::string(file));
    std::string known;
    for (const std::string& n : device_model_names()) known += (known.empty() ? "" : ", ") + n;
    throw UserError("thunder-gen", "--device-model " + name_or_path, "no such device; known: " + known + ", or a path to a .json description");
  }
  std::ifstream in(name_or_path, std::ios::binary);
  if (!in) throw UserError("thunder-gen", "--device-model " + name_or_path, "cannot read the file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_device(text.str(), name_or_path);
}

}  // namespace tg
