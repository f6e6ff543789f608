// thunder-gen size binding: what <trace>_bind_sizes (a folder generated from a symbolic trace)
// is made of. It reads the symbols (B, T, ...) from the dims of the inputs the trace sizes with
// them, checks them against each other, against each symbol's range and divisibility, and every
// other dim against its size expression, then against the sizes the folder's code was generated
// at. What is wrong is written into the caller's buffer naming the input, the dimension, the
// symbol and its range. Host code only; nothing here allocates.
#pragma once
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "tg_host.h"

namespace tg {

// A symbol as the folder declares it (min <= value <= max, a multiple of multiple_of) and the
// size its code was generated at.
struct SizeSymbol {
  const char* name;
  long long min, max, multiple_of, specialized;
};

// One input's shape as a caller gives it: `rank` dims at `dims`.
struct CallShape {
  const char* name;
  const int64_t* dims;
  int rank;
};

// Where a symbol's size came from: the dim of an input the trace sizes as the symbol alone, or,
// for a symbol no input dim gives alone (only inside B*T, say), the folder's size (input null).
struct BoundSize {
  long long value = 0;
  const char* input = nullptr;
  int dim = 0;
};

// int64 arithmetic that remembers an overflow instead of wrapping; floor division as Python's //.
class SizeArith {
 public:
  bool overflowed() const { return overflowed_; }
  int64_t add(int64_t a, int64_t b) { return checked(__builtin_add_overflow(a, b, &result_)); }
  int64_t mul(int64_t a, int64_t b) { return checked(__builtin_mul_overflow(a, b, &result_)); }
  int64_t floordiv(int64_t a, int64_t b) {
    if (b <= 0) return checked(true);  // a divisor is positive at every size in range
    const int64_t q = a / b;
    return a % b != 0 && a < 0 ? q - 1 : q;
  }
  static int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
  static int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }

 private:
  int64_t checked(bool overflow) {
    overflowed_ = overflowed_ || overflow;
    return overflow ? 0 : result_;
  }
  int64_t result_ = 0;
  bool overflowed_ = false;
};

// The checks of one call, in the order <trace>_bind_sizes makes them; each returns false after
// writing what is wrong, and status() is then the call's result.
class SizeBinder {
 public:
  SizeBinder(const SizeSymbol* symbols, BoundSize* bound, int count, char* message, size_t message_bytes)
      : symbols_(symbols), bound_(bound), count_(count), message_(message), message_bytes_(message_bytes) {
    for (int k = 0; k < count; ++k) bound_[k] = BoundSize{symbols[k].specialized, nullptr, 0};
    say("");
  }

  int status() const { return status_; }

  // `in` has `rank` dims; `sizes` says them ("[B, T, 64]").
  bool has_rank(const CallShape& in, int rank, const char* sizes) {
    if (in.rank != rank) return fail(kBadSizes, "input '%s': expected %d dimensions (%s), got %d", in.name, rank, sizes, in.rank);
    if (rank > 0 && !in.dims) return fail(kNullPointer, "input '%s': its dims are a null pointer", in.name);
    return true;
  }

  // Symbol k is dim `dim` of `in`: bound there, unless an earlier input bound it to another size.
  bool bind(int k, const CallShape& in, int dim) {
    const long long got = in.dims[dim];
    BoundSize& b = bound_[k];
    if (!b.input) {
      b = BoundSize{got, in.name, dim};
      return true;
    }
    if (b.value == got) return true;
    return fail(kBadSizes, "input '%s' dim %d is %lld, but %s is %lld (input '%s' dim %d): the inputs disagree on %s", in.name, dim, got,
                symbols_[k].name, b.value, b.input, b.dim, symbols_[k].name);
  }

  // Every bound symbol is in its range and a multiple of what it must be.
  bool in_range() {
    for (int k = 0; k < count_; ++k) {
      const SizeSymbol& s = symbols_[k];
      const BoundSize& b = bound_[k];
      if (!b.input || (b.value >= s.min && b.value <= s.max && b.value % s.multiple_of == 0)) continue;
      char range[160];
      range_text(s, range, sizeof range);
      return fail(kBadSizes, "input '%s' dim %d is %lld, but %s must be %s", b.input, b.dim, b.value, s.name, range);
    }
    return true;
  }

  // Symbol k's size: bound from an input, or the folder's.
  int64_t value(int k) const { return bound_[k].value; }

  // Dim `dim` of `in` is the constant `want`.
  bool expect(const CallShape& in, int dim, int64_t want) {
    if (in.dims[dim] == want) return true;
    return fail(kBadSizes, "input '%s' dim %d is %lld, but the trace's size there is %lld", in.name, dim, (long long)in.dims[dim], (long long)want);
  }

  // Dim `dim` of `in` is `want`, the value of the expression `text` over the symbols listed in
  // `named` (`named_count` indices), computed by `arith`.
  bool expect(const CallShape& in, int dim, int64_t want, const SizeArith& arith, const char* text, const int* named, int named_count) {
    if (!arith.overflowed() && in.dims[dim] == want) return true;
    char at[512], unbound[512];
    assignment(named, named_count, false, at, sizeof at);
    names_not_bound(named, named_count, unbound, sizeof unbound);
    const char* value = arith.overflowed() ? "past int64" : nullptr;
    char number[32];
    if (!value) std::snprintf(number, sizeof number, "%lld", (long long)want), value = number;
    return fail(kBadSizes, "input '%s' dim %d is %lld, but the trace's size there is %s = %s at %s%s", in.name, dim, (long long)in.dims[dim], text, value,
                at, unbound);
  }

  // The sizes are the ones the folder's code was generated at.
  bool at_specialization() {
    bool moved = false;
    for (int k = 0; k < count_; ++k) moved = moved || bound_[k].value != symbols_[k].specialized;
    if (!moved) return true;
    char inputs[512], folder[512], wanted[512];
    assignment(nullptr, count_, true, inputs, sizeof inputs);
    specialization(folder, sizeof folder);
    assignment(nullptr, count_, false, wanted, sizeof wanted);
    return fail(kBadSizes, "the inputs are at %s, and this folder runs at %s only; generate one for these sizes with --specialize %s", inputs, folder,
                wanted);
  }

 private:
  const SizeSymbol* symbols_;
  BoundSize* bound_;
  int count_;
  char* message_;
  size_t message_bytes_;
  int status_ = kOk;

  void say(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    if (!message_ || !message_bytes_) return;
    va_list args;
    va_start(args, format);
    std::vsnprintf(message_, message_bytes_, format, args);
    va_end(args);
  }
  template <class... Args>
  bool fail(int status, const char* format, Args... args) {
    status_ = status;
    say(format, args...);
    return false;
  }

  // "B=4,T=3": the sizes of the symbols listed in `named` (null: all of them; only those bound
  // from an input, with `bound_only`).
  void assignment(const int* named, int n, bool bound_only, char* out, size_t bytes) const {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; ++i) {
      const int k = named ? named[i] : i;
      if (bound_only && !bound_[k].input) continue;
      append(out, bytes, used, "%s%s=%lld", used ? "," : "", symbols_[k].name, bound_[k].value);
    }
  }
  void specialization(char* out, size_t bytes) const {
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < count_; ++k) append(out, bytes, used, "%s%s=%lld", k ? "," : "", symbols_[k].name, symbols_[k].specialized);
  }
  // " (T as this folder has it: no input dim is one alone)", or "" when every listed symbol is bound.
  void names_not_bound(const int* named, int n, char* out, size_t bytes) const {
    size_t used = 0, count = 0;
    out[0] = '\0';
    for (int i = 0; i < n; ++i)
      if (!bound_[named[i]].input) append(out, bytes, used, "%s%s", count++ ? ", " : " (", symbols_[named[i]].name);
    if (count) append(out, bytes, used, " as this folder has %s: no input dim is one alone)", count > 1 ? "them" : "it");
  }
  static void range_text(const SizeSymbol& s, char* out, size_t bytes) {
    size_t used = 0;
    out[0] = '\0';
    append(out, bytes, used, "%lld <= %s <= %lld", s.min, s.name, s.max);
    if (s.multiple_of > 1) append(out, bytes, used, ", a multiple of %lld", s.multiple_of);
  }
  static void append(char* out, size_t bytes, size_t& used, const char* format, ...) __attribute__((format(printf, 4, 5))) {
    if (used + 1 >= bytes) return;
    va_list args;
    va_start(args, format);
    const int n = std::vsnprintf(out + used, bytes - used, format, args);
    va_end(args);
    if (n > 0) used = used + size_t(n) < bytes ? used + size_t(n) : bytes - 1;
  }
};

}  // namespace tg
