// thunder-gen size binding: what <trace>_bind_sizes (a folder generated from a symbolic trace
// whose inputs are sized with symbols) is made of. It reads the symbols (B, T, ...) from the dims
// of those inputs, checks them against each other, against each symbol's range and divisibility,
// and every other dim against its size expression, then against the sizes the folder's code was
// generated at. What is wrong is written into the caller's buffer naming the input, the
// dimension, the symbol and its range. Host code only; nothing here allocates.
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

// A size expression's arithmetic as thunder-gen evaluates it (SizeExpr::evaluate): sums and
// products in 128 bits, so the order of the terms cannot make a value that fits overflow on the
// way; each operand of floor division, max and min, and the result, must fit int64. Floor
// division as Python's //. An overflow is remembered, never wrapped.
class SizeArith {
 public:
  using Wide = __int128;
  bool overflowed() const { return overflowed_; }
  Wide add(Wide a, Wide b) { return checked(__builtin_add_overflow(a, b, &result_)); }
  Wide mul(Wide a, Wide b) { return checked(__builtin_mul_overflow(a, b, &result_)); }
  Wide floordiv(Wide a, Wide b) {
    if (b <= 0) return checked(true);  // a divisor is positive at every size in range
    const Wide q = a / b;
    return a % b != 0 && a < 0 ? q - 1 : q;
  }
  static Wide max(Wide a, Wide b) { return a > b ? a : b; }
  static Wide min(Wide a, Wide b) { return a < b ? a : b; }
  // The value as an int64 size (an overflow past it).
  Wide narrow(Wide v) {
    if (v < INT64_MIN || v > INT64_MAX) return checked(true);
    return v;
  }

 private:
  Wide checked(bool overflow) {
    overflowed_ = overflowed_ || overflow;
    return overflow ? 0 : result_;
  }
  Wide result_ = 0;
  bool overflowed_ = false;
};

// The caller's message buffer, appended to and cut to its size (always NUL-terminated).
class SizeMessage {
 public:
  SizeMessage(char* out, size_t bytes) : out_(out), bytes_(bytes) {
    if (out_ && bytes_) out_[0] = '\0';
  }
  void add(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    if (!out_ || used_ + 1 >= bytes_) return;
    va_list args;
    va_start(args, format);
    const int n = std::vsnprintf(out_ + used_, bytes_ - used_, format, args);
    va_end(args);
    if (n > 0) used_ = used_ + size_t(n) < bytes_ ? used_ + size_t(n) : bytes_ - 1;
  }

 private:
  char* out_;
  size_t bytes_;
  size_t used_ = 0;
};

// The checks of one call, in the order <trace>_bind_sizes makes them; each returns false after
// writing what is wrong, and status() is then the call's result.
class SizeBinder {
 public:
  SizeBinder(const SizeSymbol* symbols, BoundSize* bound, int count, char* message, size_t message_bytes)
      : symbols_(symbols), bound_(bound), count_(count), message_(message, message_bytes) {
    for (int k = 0; k < count; ++k) bound_[k] = BoundSize{symbols[k].specialized, nullptr, 0};
  }

  int status() const { return status_; }

  // `in` has `rank` dims; `sizes` says them ("[B, T, 64]").
  bool has_rank(const CallShape& in, int rank, const char* sizes) {
    if (in.rank != rank) {
      message_.add("input '%s': expected %d dimensions (%s), got %d", in.name, rank, sizes, in.rank);
      return failed(kBadSizes);
    }
    if (rank > 0 && !in.dims) {
      message_.add("input '%s': its dims are a null pointer", in.name);
      return failed(kNullPointer);
    }
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
    message_.add("input '%s' dim %d is %lld, but %s is %lld (input '%s' dim %d): the inputs disagree on %s", in.name, dim, got,
                 symbols_[k].name, b.value, b.input, b.dim, symbols_[k].name);
    return failed(kBadSizes);
  }

  // Every bound symbol is in its range and a multiple of what it must be.
  bool in_range() {
    for (int k = 0; k < count_; ++k) {
      const SizeSymbol& s = symbols_[k];
      const BoundSize& b = bound_[k];
      if (!b.input || (b.value >= s.min && b.value <= s.max && b.value % s.multiple_of == 0)) continue;
      message_.add("input '%s' dim %d is %lld, but %s must be %lld <= %s <= %lld", b.input, b.dim, b.value, s.name, s.min, s.name, s.max);
      if (s.multiple_of > 1) message_.add(", a multiple of %lld", s.multiple_of);
      return failed(kBadSizes);
    }
    return true;
  }

  // Symbol k's size: bound from an input, or the folder's.
  int64_t value(int k) const { return bound_[k].value; }

  // Dim `dim` of `in` is the constant `want`.
  bool expect(const CallShape& in, int dim, int64_t want) {
    if (in.dims[dim] == want) return true;
    message_.add("input '%s' dim %d is %lld, but the trace's size there is %lld", in.name, dim, (long long)in.dims[dim], (long long)want);
    return failed(kBadSizes);
  }

  // Dim `dim` of `in` is `want`, the value of the expression `text` over the symbols listed in
  // `named` (`named_count` indices), computed by `arith`.
  bool expect(const CallShape& in, int dim, SizeArith::Wide want, const SizeArith& arith, const char* text, const int* named, int named_count) {
    if (!arith.overflowed() && in.dims[dim] == want) return true;
    message_.add("input '%s' dim %d is %lld, but the trace's size there is %s = ", in.name, dim, (long long)in.dims[dim], text);
    if (arith.overflowed()) message_.add("past int64");
    else message_.add("%lld", (long long)want);
    message_.add(" at ");
    assignment(named, named_count, false);
    unbound_note(named, named_count);
    return failed(kBadSizes);
  }

  // The sizes are the ones the folder's code was generated at.
  bool at_specialization() {
    bool moved = false;
    for (int k = 0; k < count_; ++k) moved = moved || bound_[k].value != symbols_[k].specialized;
    if (!moved) return true;
    message_.add("the inputs are at ");
    assignment(nullptr, count_, true);
    message_.add(", and this folder runs at ");
    for (int k = 0; k < count_; ++k) message_.add("%s%s=%lld", k ? "," : "", symbols_[k].name, symbols_[k].specialized);
    message_.add(" only; generate one for these sizes with --specialize ");
    assignment(nullptr, count_, false);
    return failed(kBadSizes);
  }

 private:
  const SizeSymbol* symbols_;
  BoundSize* bound_;
  int count_;
  SizeMessage message_;
  int status_ = kOk;

  bool failed(int status) {
    status_ = status;
    return false;
  }
  // "B=4,T=3": the sizes of the symbols listed in `named` (null: all of them; only those bound
  // from an input, with `bound_only`).
  void assignment(const int* named, int n, bool bound_only) {
    bool first = true;
    for (int i = 0; i < n; ++i) {
      const int k = named ? named[i] : i;
      if (bound_only && !bound_[k].input) continue;
      message_.add("%s%s=%lld", first ? "" : ",", symbols_[k].name, bound_[k].value);
      first = false;
    }
  }
  // " (T as this folder has it: no input dim is one alone)", when a listed symbol is not bound.
  void unbound_note(const int* named, int n) {
    int count = 0;
    for (int i = 0; i < n; ++i)
      if (!bound_[named[i]].input) message_.add("%s%s", count++ ? ", " : " (", symbols_[named[i]].name);
    if (count) message_.add(" as this folder has %s: no input dim is one alone)", count > 1 ? "them" : "it");
  }
};

}  // namespace tg
