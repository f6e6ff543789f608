// thunder-gen harness runtime: the .npy file interface of the contract (thunder-gen's
// docs/trace-format.md), seeded inputs, and timing. Generated harness.cpp files declare their
// buffers and call the entry points; everything else is here.
//
//   harness [--inputs DIR] [--outputs DIR] [--seed N] [--repeat N] [--quiet] [--workspace]
//           [--philox-seed N] [--philox-offset N]
// Reads DIR/<input>.npy and DIR/cotangent_<output>.npy where present (else draws from the seed and
// names the drawn ones on stderr; DIR must exist), strictly (tg_npy.h: exact dtype and shape, no
// bytes missing or left over; a bad file exits 1). Runs the forward (and the backward, when the
// trace trains) once, then --repeat more times for timing, and checks every run gives the same bytes. Writes every input and cotangent it used,
// every output and every grad_<input> to --outputs. --workspace passes the entry points a
// workspace of <trace>_workspace_bytes(), so they allocate nothing (under emulation the harness
// says how many allocations they made). Exits non-zero on any failure (an entry point's status
// other than 0 is printed in words); a bad argument prints the usage line and exits 2.
// The member functions are defined after the class: inline, or (TG_RUNTIME_PREBUILT, see
// tg_runtime.cuh) in a library compiled once.
#pragma once
#define TG_HOST_ONLY
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include <unistd.h>

#include "tg_host.h"
#include "tg_npy.h"
#include "tg_runtime.cuh"

namespace tg {

struct Buffer {
  std::string name;
  std::string dtype;  // Thunder's short name
  std::vector<int64_t> shape;
  bool is_scalar = false;
  std::vector<unsigned char> host;
  void* device = nullptr;
  size_t bytes() const { return host.size(); }
  template <class T> T scalar() const { T v; std::memcpy(&v, host.data(), sizeof(T)); return v; }
};

class Harness {
 public:
  // rank >= 0: one rank of a distributed trace's job (tg_ranks.h): --world-size N is accepted (the
  // rank runner reads it), and the rank reads <inputs>/rank<r>/ and writes <outputs>/rank<r>/.
  Harness(int argc, char** argv, const char* trace, int rank = -1);

  // What a scalar input is for: the seed or offset of the trace's Philox draws (dropout) can be
  // set with --philox-seed / --philox-offset.
  enum class Role { data, philox_seed, philox_offset };

  // A tensor or scalar input: loaded from <inputs>/<name>.npy, or drawn from the seed; a Philox
  // seed or offset given on the command line wins over both.
  // Floats are drawn uniform in [lo, hi): by default [-2, 2), or the trace's "init" range.
  Buffer& input(const char* name, const char* dtype, std::vector<int64_t> shape, bool is_scalar = false, Role role = Role::data,
                double lo = -2.0, double hi = 2.0);
  Buffer& output(const char* name, const char* dtype, std::vector<int64_t> shape);

  // A device buffer the entry points pass between them (a value saved for the backward); never
  // read from or written to files.
  // How an internal buffer is stored: an element per element, or (saved b8 masks) one bit each.
  enum class Storage { dense, bits };
  Buffer& internal(const char* name, const char* dtype, std::vector<int64_t> shape, Storage storage = Storage::dense);

  struct Phase {
    const char* name;  // "forward", "backward"
    std::function<int(Stream)> step;  // an entry point's call: its status
  };

  // A symbolic trace's folder: the shapes of the inputs sized with symbols (the headers of their
  // .npy files in --inputs DIR, or `folder` for one not there, which is drawn at the folder's
  // sizes) bound by `bind` (the folder's <trace>_bind_sizes_array) before anything is read. Sizes
  // it refuses end the run with its words and exit code 1.
  using BindSizes = std::function<int(const int64_t* const* dims, const int* ranks, char* message, size_t bytes)>;
  void check_sizes(const std::vector<std::pair<const char*, std::vector<int64_t>>>& inputs, const BindSizes& bind);
  // A folder that takes its sizes at run time: the call's size of each symbol (named `symbols`),
  // bound by `bind` (<trace>_bind_sizes_array) from the inputs sized with symbols, each its .npy
  // header's shape or, drawn, shape_at(the sizes --sizes NAME=N,... names, else `drawn_at`): {-1}
  // where that shape is past int64 (refused, naming the input).
  using ShapeAt = std::function<std::vector<int64_t>(const int64_t* sizes)>;
  using BindSizesTo = std::function<int(const int64_t* const* dims, const int* ranks, int64_t* sizes, char* message, size_t bytes)>;
  std::vector<int64_t> bind_sizes(const std::vector<const char*>& symbols, std::vector<int64_t> drawn_at,
                                  const std::vector<std::pair<const char*, ShapeAt>>& inputs, const BindSizesTo& bind);

  // With --workspace, `bytes` of device memory for the entry points (freed with the harness);
  // else null, and they allocate their temporaries themselves.
  void* workspace(size_t bytes);

  // Runs the phases in order once for the results, then --repeat times for timing (each phase
  // timed on its own); every run must give the same output bytes. A phase's status other than 0
  // ends the run with `status_string`'s words and exit code 1.
  int run(const std::vector<Phase>& phases, const char* (*status_string)(int));

  ~Harness();

 private:
  const char* trace_;
  std::string inputs_dir_, outputs_dir_;
  uint64_t seed_ = 0;
  int repeat_ = 0;
  long long philox_seed_ = 0, philox_offset_ = 0;
  bool has_philox_seed_ = false, has_philox_offset_ = false;
  bool quiet_ = false, inputs_given_ = false, outputs_given_ = false, sizes_given_ = false, use_workspace_ = false;
  void* workspace_ = nullptr;
  Stream stream_ = nullptr;
  std::deque<Buffer> buffers_;  // a deque: the Buffer& handed out stay valid as it grows
  std::vector<Buffer*> outputs_, written_;
  std::vector<std::string> drawn_;  // inputs not found in --inputs DIR

  [[noreturn]] void usage(const char* message);
  // The value of a numeric flag: the whole string, a decimal integer in T's range (and >= 0 when
  // `non_negative`); anything else is a usage error.
  template <class T> T number(const std::string& flag, const std::string& text, bool non_negative = false);
  void report_drawn() const;
  void bind_shapes(const std::vector<std::pair<const char*, ShapeAt>>& inputs, const int64_t* drawn_at, const BindSizesTo& bind, int64_t* sizes,
                   const std::string& drawn_sizes) const;
  std::string sizes_text_;  // --sizes, until bind_sizes takes it

  void set_integer(Buffer& b, long long v);

  static int element_size(const std::string& dtype);
  static std::string shape_text(const std::vector<int64_t>& shape);

  Buffer& add(const char* name, const char* dtype, std::vector<int64_t> shape, bool is_scalar, Storage storage = Storage::dense);

  void fetch_outputs();

  // splitmix64, seeded per input by its name, so adding an input does not change the others.
  static uint64_t mix(uint64_t& state);
  void draw(Buffer& b, double lo, double hi) const;

  long long nonfinite(const Buffer& b) const;

  bool write_npy(const std::string& path, const Buffer& b) const;

  // No file at `path`, not even a link (a link that leads nowhere was meant to be read: reading it
  // fails, never a draw).
  static bool missing(const std::string& path) {
    std::error_code ec;
    return std::filesystem::symlink_status(path, ec).type() == std::filesystem::file_type::not_found;
  }
  // Reads a .npy of exactly the buffer's dtype and shape; false when the file does not exist.
  bool read_npy(const std::string& path, Buffer& b) const;
  void prepare_outputs_dir();
};

#if TG_DEFINE_OUT_OF_LINE

template <class T> T Harness::number(const std::string& flag, const std::string& text, bool non_negative) {
  T v{};
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, v);  // no sign for unsigned T, no spaces, no '+'
  bool ok = !text.empty() && error == std::errc() && stop == end;
  if constexpr (std::is_signed_v<T>) ok = ok && !(non_negative && v < 0);
  if (!ok) usage((flag + " needs " + (non_negative ? "a non-negative" : "an") + " integer in range, not '" + text + "'").c_str());
  return v;
}

TG_OUT_OF_LINE Harness::Harness(int argc, char** argv, const char* trace, int rank) : trace_(trace) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--inputs") inputs_dir_ = value(), inputs_given_ = true;
    else if (a == "--outputs") outputs_dir_ = value(), outputs_given_ = true;
    else if (a == "--seed") seed_ = number<uint64_t>(a, value());
    else if (a == "--repeat") repeat_ = number<int>(a, value(), true);
    else if (a == "--quiet") quiet_ = true;
    else if (a == "--workspace") use_workspace_ = true;
    else if (a == "--sizes") sizes_text_ = value(), sizes_given_ = true;
    else if (a == "--philox-seed") philox_seed_ = number<long long>(a, value()), has_philox_seed_ = true;
    else if (a == "--philox-offset") philox_offset_ = number<long long>(a, value()), has_philox_offset_ = true;
    else if (a == "--world-size" && rank >= 0) number<int>(a, value(), true);
    else usage(("unknown argument " + a).c_str());
  }
  if (sizes_given_ && sizes_text_.empty()) usage("--sizes needs NAME=N,...");
  if (rank >= 0) {
    if (inputs_given_) inputs_dir_ += "/rank" + std::to_string(rank);
    if (outputs_given_) outputs_dir_ += "/rank" + std::to_string(rank);
  }
  // A mistyped --inputs would otherwise run on drawn inputs as if nothing were wrong.
  std::error_code ec;
  if (inputs_given_ && !std::filesystem::is_directory(inputs_dir_, ec)) usage(("--inputs " + inputs_dir_ + ": no such folder").c_str());
  if (outputs_given_) prepare_outputs_dir();
}

// Before the run, not after it: a folder that cannot be written would cost the whole run.
TG_OUT_OF_LINE void Harness::prepare_outputs_dir() {
  if (outputs_dir_.empty()) usage("--outputs needs a folder");
  std::error_code ec;
  std::filesystem::create_directories(outputs_dir_, ec);
  const char* problem = !std::filesystem::is_directory(outputs_dir_, ec) ? "cannot create the folder"
                        : ::access(outputs_dir_.c_str(), W_OK | X_OK) != 0 ? "the folder is not writable"
                                                                           : nullptr;
  if (!problem) return;
  std::fprintf(stderr, "%s: --outputs %s: %s\n", trace_, outputs_dir_.c_str(), problem);
  std::exit(1);
}

TG_OUT_OF_LINE Buffer& Harness::input(const char* name, const char* dtype, std::vector<int64_t> shape, bool is_scalar, Role role,
                                      double lo, double hi) {
  Buffer& b = add(name, dtype, std::move(shape), is_scalar);
  const bool from_flag = (role == Role::philox_seed && has_philox_seed_) || (role == Role::philox_offset && has_philox_offset_);
  if (!(inputs_given_ && read_npy(inputs_dir_ + "/" + name + ".npy", b))) {
    draw(b, lo, hi);
    if (inputs_given_ && !from_flag) drawn_.push_back(name);
  }
  if (role == Role::philox_seed && has_philox_seed_) set_integer(b, philox_seed_);
  if (role == Role::philox_offset && has_philox_offset_) set_integer(b, philox_offset_);
  if (!is_scalar) copy_to_device(b.device, b.host.data(), b.bytes(), stream_);
  written_.push_back(&b);
  return b;
}

TG_OUT_OF_LINE Buffer& Harness::output(const char* name, const char* dtype, std::vector<int64_t> shape) {
  Buffer& b = add(name, dtype, std::move(shape), false);
  outputs_.push_back(&b);
  written_.push_back(&b);
  return b;
}

TG_OUT_OF_LINE Buffer& Harness::internal(const char* name, const char* dtype, std::vector<int64_t> shape, Storage storage) {
  return add(name, dtype, std::move(shape), false, storage);
}

TG_OUT_OF_LINE void* Harness::workspace(size_t bytes) {
  if (use_workspace_ && !workspace_ && bytes) workspace_ = device_alloc(bytes, stream_);
  return workspace_;
}

TG_OUT_OF_LINE int Harness::run(const std::vector<Phase>& phases, const char* (*status_string)(int)) {
  if (!sizes_text_.empty()) usage("--sizes: this folder's sizes are static");
  report_drawn();
  auto step = [&](const Phase& p) {
    if (const int status = p.step(stream_)) {
      std::fprintf(stderr, "%s: %s: status %d: %s\n", trace_, p.name, status, status_string(status));
      std::exit(1);
    }
  };
#if !defined(TG_ON_GPU)
  const long allocations_before = allocations().load();
#endif
  for (const Phase& p : phases) step(p);
  synchronize(stream_);
#if !defined(TG_ON_GPU)
  if (!quiet_) std::printf("%s: the entry points allocated %ld times\n", trace_, allocations().load() - allocations_before);
#endif
  fetch_outputs();
  std::vector<std::vector<unsigned char>> first;
  for (Buffer* b : outputs_) first.push_back(b->host);
  std::vector<std::vector<double>> ms(phases.size());
  for (int r = 0; r < repeat_; ++r)
    for (size_t i = 0; i < phases.size(); ++i) {
      auto start = std::chrono::steady_clock::now();
      step(phases[i]);
      synchronize(stream_);
      ms[i].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
  int failures = 0;
  if (repeat_ > 0) {
    fetch_outputs();
    for (size_t i = 0; i < outputs_.size(); ++i)
      if (outputs_[i]->host != first[i]) {
        std::fprintf(stderr, "%s: output %s differs between runs\n", trace_, outputs_[i]->name.c_str());
        ++failures;
      }
  }
  if (outputs_given_) {
    for (Buffer* b : written_) failures += !write_npy(outputs_dir_ + "/" + b->name + ".npy", *b);
  }
  if (!quiet_) {
    for (Buffer* b : outputs_) std::printf("%s: output %s: %s[%s], %lld non-finite\n", trace_, b->name.c_str(), b->dtype.c_str(), shape_text(b->shape).c_str(), nonfinite(*b));
    for (size_t i = 0; i < phases.size() && repeat_ > 0; ++i) {
      std::sort(ms[i].begin(), ms[i].end());
      std::printf("%s: %s: median %.3f ms over %d runs\n", trace_, phases[i].name, ms[i][ms[i].size() / 2], repeat_);
    }
  }
  return failures == 0 ? 0 : 1;
}

TG_OUT_OF_LINE Harness::~Harness() {
  for (Buffer& b : buffers_) device_free(b.device, stream_);
  device_free(workspace_, stream_);
}

[[noreturn]] TG_OUT_OF_LINE void Harness::usage(const char* message) {
  std::fprintf(stderr,
               "%s: %s\nusage: harness [--inputs DIR] [--outputs DIR] [--seed N] [--repeat N] [--quiet] [--workspace] "
               "[--philox-seed N] [--philox-offset N] [--sizes NAME=N,...]\n",
               trace_, message);
  std::exit(2);
}

// Said even with --quiet: a file meant to be read but misnamed or missing changes the results.
TG_OUT_OF_LINE void Harness::check_sizes(const std::vector<std::pair<const char*, std::vector<int64_t>>>& inputs, const BindSizes& bind) {
  if (!sizes_text_.empty()) usage("--sizes: this folder runs at the sizes it was generated for only");
  std::vector<std::pair<const char*, ShapeAt>> shapes;
  for (const auto& [name, folder] : inputs) shapes.emplace_back(name, [folder = folder](const int64_t*) { return folder; });
  bind_shapes(shapes, nullptr, [&](const int64_t* const* dims, const int* ranks, int64_t*, char* message, size_t bytes) {
    return bind(dims, ranks, message, bytes);
  }, nullptr, "the folder's sizes");
}

TG_OUT_OF_LINE std::vector<int64_t> Harness::bind_sizes(const std::vector<const char*>& symbols, std::vector<int64_t> drawn_at,
                                                        const std::vector<std::pair<const char*, ShapeAt>>& inputs, const BindSizesTo& bind) {
  std::string rest = sizes_text_, said;
  sizes_text_.clear();
  if (!rest.empty() && rest.back() == ',') usage("--sizes: a trailing comma");
  std::vector<bool> given(symbols.size());
  while (!rest.empty()) {  // NAME=N[,NAME=N...]
    const std::string item = rest.substr(0, rest.find(','));
    rest = item.size() < rest.size() ? rest.substr(item.size() + 1) : "";
    const size_t eq = item.find('=');
    size_t k = 0;
    while (eq != std::string::npos && k < symbols.size() && item.substr(0, eq) != symbols[k]) ++k;
    if (eq == std::string::npos || k == symbols.size()) usage(("--sizes: '" + item + "' is not NAME=N for a symbol of this folder").c_str());
    if (given[k]) usage(("--sizes: " + std::string(symbols[k]) + " is given twice").c_str());
    given[k] = true;
    drawn_at[k] = number<int64_t>("--sizes", item.substr(eq + 1), true);
  }
  for (size_t k = 0; k < symbols.size(); ++k) said += (k ? "," : "") + std::string(symbols[k]) + "=" + std::to_string(drawn_at[k]);
  std::vector<int64_t> sizes(symbols.size());
  bind_shapes(inputs, drawn_at.data(), bind, sizes.data(), "--sizes " + said);
  return sizes;
}

// Binds the inputs' shapes (read from their .npy headers, or those drawn: shape_at(drawn_at)),
// or says why not and exits.
TG_OUT_OF_LINE void Harness::bind_shapes(const std::vector<std::pair<const char*, ShapeAt>>& inputs, const int64_t* drawn_at, const BindSizesTo& bind,
                                         int64_t* sizes, const std::string& drawn_sizes) const {
  std::vector<std::vector<int64_t>> shapes;
  std::string drawn;
  for (const auto& [name, shape_at] : inputs) {
    const std::string path = inputs_dir_ + "/" + name + ".npy";
    if (!inputs_given_ || missing(path)) {
      shapes.push_back(shape_at(drawn_at));
      if (shapes.back() == std::vector<int64_t>{-1}) {  // (its size expressions overflow int64 there)
        std::fprintf(stderr, "%s: input %s, drawn at %s: its shape is past int64 there\n", trace_, name, drawn_sizes.c_str());
        std::exit(1);
      }
      drawn += (drawn.empty() ? "" : ", ") + std::string(name);
      continue;
    }
    try {
      shapes.push_back(npy::read_header_of(path).shape);
    } catch (const npy::Error& e) {
      std::fprintf(stderr, "%s: %s\n", trace_, e.what());
      std::exit(1);
    }
  }
  std::vector<const int64_t*> dims;
  std::vector<int> ranks;
  for (const std::vector<int64_t>& shape : shapes) dims.push_back(shape.data()), ranks.push_back(int(shape.size()));
  char message[4096] = "";
  if (const int status = bind(dims.data(), ranks.data(), sizes, message, sizeof message)) {
    const std::string not_read = inputs_given_ && !drawn.empty() ? "; not in " + inputs_dir_ + ", so drawn at " + drawn_sizes + ": " + drawn : "";
    std::fprintf(stderr, "%s: the inputs' sizes: %s (%s)%s\n", trace_, message, status_string(status), not_read.c_str());
    std::exit(1);
  }
}

TG_OUT_OF_LINE void Harness::report_drawn() const {
  if (drawn_.empty()) return;
  std::string names;
  for (const std::string& n : drawn_) names += (names.empty() ? "" : ", ") + n;
  std::fprintf(stderr, "%s: not in %s, drawn from seed %llu instead: %s\n", trace_, inputs_dir_.c_str(), (unsigned long long)seed_, names.c_str());
}

TG_OUT_OF_LINE void Harness::set_integer(Buffer& b, long long v) {
  if (b.dtype == "i64") { int64_t x = v; std::memcpy(b.host.data(), &x, 8); }
  else if (b.dtype == "i32" && v >= INT32_MIN && v <= INT32_MAX) { int32_t x = int32_t(v); std::memcpy(b.host.data(), &x, 4); }
  else if (b.dtype == "i32") usage(("the Philox input " + b.name + " is i32; " + std::to_string(v) + " does not fit").c_str());
  else usage(("Philox seed and offset inputs must be i64 or i32; " + b.name + " is " + b.dtype).c_str());
}

TG_OUT_OF_LINE int Harness::element_size(const std::string& dtype) {
  if (dtype == "b8" || dtype == "u8" || dtype == "i8") return 1;
  if (dtype == "i16" || dtype == "f16" || dtype == "bf16") return 2;
  if (dtype == "i32" || dtype == "f32") return 4;
  return 8;
}

TG_OUT_OF_LINE std::string Harness::shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s;
}

TG_OUT_OF_LINE Buffer& Harness::add(const char* name, const char* dtype, std::vector<int64_t> shape, bool is_scalar, Storage storage) {
  Buffer b;
  b.name = name;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.is_scalar = is_scalar;
  // Its element and byte counts, or past size_t: as unallocatable as a bad_alloc.
  size_t n = 1, bytes = 0;
  bool past = false;
  for (int64_t d : b.shape) past = past || __builtin_mul_overflow(n, size_t(d), &n);
  if (storage == Storage::bits) bytes = (n / 32 + (n % 32 != 0)) * 4;  // (whole 32-bit words)
  else past = past || __builtin_mul_overflow(n, element_size(b.dtype), &bytes);
  try {
    if (past) throw std::bad_alloc();
    b.host.assign(bytes, 0);
  } catch (const std::exception&) {  // (bad_alloc; length_error past the vector's limit)
    std::fprintf(stderr, "%s: cannot allocate %s bytes for %s at these sizes\n", trace_, past ? "2^64 or more" : std::to_string(bytes).c_str(), name);
    std::exit(1);
  }
  if (!is_scalar) b.device = device_alloc(b.bytes(), stream_);
  buffers_.push_back(std::move(b));
  return buffers_.back();
}

TG_OUT_OF_LINE void Harness::fetch_outputs() {
  for (Buffer* b : outputs_) copy_to_host(b->host.data(), b->device, b->bytes(), stream_);
  synchronize(stream_);
}

TG_OUT_OF_LINE uint64_t Harness::mix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

TG_OUT_OF_LINE void Harness::draw(Buffer& b, double lo, double hi) const {
  uint64_t state = seed_;
  for (char c : b.name) state = state * 131 + uint64_t(static_cast<unsigned char>(c));
  size_t n = b.bytes() / element_size(b.dtype);
  unsigned char* p = b.host.data();
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = mix(state);
    double u = double(r >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    double x = lo + (hi - lo) * u;                            // floats in [lo, hi)
    int64_t k = int64_t(r % 9) - 4;                           // integers in [-4, 4]
    const std::string& t = b.dtype;
    if (t == "f32") { float v = float(x); std::memcpy(p + 4 * i, &v, 4); }
    else if (t == "f64") std::memcpy(p + 8 * i, &x, 8);
    else if (t == "bf16") { uint16_t v = to_bfloat16(float(x)).bits; std::memcpy(p + 2 * i, &v, 2); }
    else if (t == "f16") { uint16_t v = to_half(float(x)).bits; std::memcpy(p + 2 * i, &v, 2); }
    else if (t == "b8") p[i] = (r >> 63) != 0;
    else if (t == "u8") p[i] = uint8_t(r % 9);
    else if (t == "i8") p[i] = uint8_t(int8_t(k));
    else if (t == "i16") { int16_t v = int16_t(k); std::memcpy(p + 2 * i, &v, 2); }
    else if (t == "i32") { int32_t v = int32_t(k); std::memcpy(p + 4 * i, &v, 4); }
    else { std::memcpy(p + 8 * i, &k, 8); }
  }
}

TG_OUT_OF_LINE long long Harness::nonfinite(const Buffer& b) const {
  size_t n = b.bytes() / element_size(b.dtype);
  long long count = 0;
  for (size_t i = 0; i < n; ++i) {
    double v = 0;
    if (b.dtype == "f32") { float f; std::memcpy(&f, &b.host[4 * i], 4); v = f; }
    else if (b.dtype == "f64") std::memcpy(&v, &b.host[8 * i], 8);
    else if (b.dtype == "bf16") { bfloat16 h; std::memcpy(&h.bits, &b.host[2 * i], 2); v = to_float(h); }
    else if (b.dtype == "f16") { half h; std::memcpy(&h.bits, &b.host[2 * i], 2); v = to_float(h); }
    count += !(v - v == 0);
  }
  return count;
}

TG_OUT_OF_LINE bool Harness::write_npy(const std::string& path, const Buffer& b) const {
  const char* descr = npy::descr_of(b.dtype);
  std::string header = std::string("{'descr': '") + (descr ? descr : "?") + "', 'fortran_order': False, 'shape': (" + shape_text(b.shape) +
                       (b.shape.size() == 1 ? ",)" : ")") + ", }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  uint16_t len = uint16_t(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(char(len & 0xff)).put(char(len >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(b.host.data()), std::streamsize(b.bytes()));
  if (!out) std::fprintf(stderr, "%s: cannot write %s\n", trace_, path.c_str());
  return bool(out);
}

TG_OUT_OF_LINE bool Harness::read_npy(const std::string& path, Buffer& b) const {
  if (missing(path)) return false;
  try {
    const char* descr = npy::descr_of(b.dtype);
    npy::read_file(path, {descr ? descr : "?", b.shape}, [&](const npy::Header&, size_t bytes) {
      // The header matched the buffer's dtype and shape, so its size is the buffer's.
      if (bytes != b.bytes()) throw npy::Error("data of " + std::to_string(bytes) + " bytes for a buffer of " + std::to_string(b.bytes()));
      return static_cast<void*>(b.host.data());
    });
  } catch (const npy::Error& e) {
    std::fprintf(stderr, "%s: %s\n", trace_, e.what());
    std::exit(1);
  }
  return true;
}

#endif  // TG_DEFINE_OUT_OF_LINE

}  // namespace tg
