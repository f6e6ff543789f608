// The kernel IR: what a fused trace's kernels and entry point are, as data, between the kernel
// plans (src/schedule/kernel_plan.h) and the printers. Lowering (lower_kernel.h) decides every
// name, loop, load and store; the CUDA printer (print_cuda.h) and the listing (`--emit
// kernel-ir`, print_kernel_ir.h) only walk it. The same CUDA text builds with nvcc, with NVRTC
// and, against tg_emu.h, on the host: nothing here depends on how it is built.
//
// Expressions are trees whose leaves are names, literals and index arithmetic (IndexExpr, already
// simplified); an elementwise op's code is its op-table template with its operands. Statements are
// the kernel's control flow with the accesses that matter named as such: loads and stores, runs of
// them (one vector access of `width` elements), alignment tests, block reductions, barriers.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/index_expr.h"
#include "ir/size_expr.h"

namespace tg::kir {

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  enum class Kind {
    name,       // `text`: a variable, a parameter, a builtin (threadIdx.x) or a macro (TG_INFINITY)
    integer,    // `integer`, as a plain C++ integer, then `text` (a suffix: "ull")
    number,     // `number` in compute type `dtype` (1.5f, true, static_cast<int32_t>(3))
    index,      // `index`: int64_t index arithmetic (`component`: as a term of larger code, in
                //  parentheses unless a name or a number)
    condition,  // `condition`: a bool index condition
    load,       // tg::load(operands[0], operands[1]): an element from memory
    call,       // text<template_args>(operands...): a function, a cast, a reduction across the block
    init,       // text{operands...}: an aggregate (tg::ArgPair<float>{x, j})
    op_code,    // `text`, an op's code template, with {k} replaced by operands[k]
    binary,     // operands[0] text operands[1] (`text` an operator: "-", "*", "&&", ...)
    select,     // operands[0] ? operands[1] : operands[2]
    paren,      // (operands[0])
    member,     // operands[0].text
    subscript,  // operands[0][operands[1]]
    aligned,    // every pointer of `operands` (names) on a 16-byte boundary
    reduce,     // the total of each accumulator of `operands` over the threads sharing it, combined by
                // the reducer of the same place in `template_args`: across the block (`text`
                // "block": tg::block_reduce, two at once sharing the barriers: tg::block_reduce2) or
                // across a column kernel's 32 parts of a row ("column": tg::column_reduce)
  };
  Kind kind = Kind::name;
  std::string text;
  int64_t integer = 0;
  double number = 0;
  bool number_is_integer = false;  // number: an integer or bool literal (integer holds it)
  bool component = false;          // index
  DType dtype = DType::f32;
  IndexExpr index;
  IndexCond condition;
  std::vector<std::string> template_args;
  std::vector<ExprPtr> operands;
};

// Builders.
ExprPtr name(std::string text);
ExprPtr integer(int64_t value, std::string suffix = "");
ExprPtr real(double value, DType as);            // a float literal held in `as`
ExprPtr whole(int64_t value, DType as);          // an integer or bool literal in compute type `as`
ExprPtr index(IndexExpr e);
ExprPtr component(IndexExpr e);                  // an index as a term: "d0", "(d0 + 1)"
ExprPtr condition(IndexCond c);
ExprPtr load(ExprPtr pointer, ExprPtr offset);
ExprPtr call(std::string callee, std::vector<ExprPtr> args, std::vector<std::string> template_args = {});
ExprPtr cast(const std::string& type, ExprPtr e);  // static_cast<type>(e)
ExprPtr init(std::string type, std::vector<ExprPtr> members);
ExprPtr op_code(std::string code, std::vector<ExprPtr> operands);
ExprPtr binary(ExprPtr a, std::string op, ExprPtr b);
ExprPtr select(ExprPtr c, ExprPtr a, ExprPtr b);
ExprPtr paren(ExprPtr e);
ExprPtr member(ExprPtr e, std::string field);
ExprPtr subscript(ExprPtr e, ExprPtr at);
ExprPtr aligned(const std::vector<std::string>& pointers);
ExprPtr reduce(std::string across, std::vector<std::string> reducers, std::vector<ExprPtr> accumulators);

struct Stmt;
using Block = std::vector<Stmt>;

struct Stmt {
  enum class Kind {
    comment,         // a // line: `text`
    decl,            // [__shared__] [const] type name[extent] [= value]   (extent 0: not an array)
    assign,          // target op value: `op` "=", "+=" or "|="
    store,           // tg::store(pointer, offset, value): one element to memory
    load_run,        // `width` elements of pointer from `offset` into `target` (an array, or a place in one), one access
    store_run,       // `width` elements of `value` (an array, or a place in one) to pointer from `offset`, one access
    store_run_bits,  // `width` bits (value, across the warp's lanes) of a packed mask from `offset`
    eval,            // value; (a call made for its effect)
    loop,            // for (type var = start; var < bound; step) body   (step null: ++var)
    branch,          // if (value) body else orelse   (orelse empty: no else)
    scope,           // { body }
    barrier,         // __syncthreads(): every thread of the block waits for the others
  };
  Kind kind = Kind::comment;
  std::string text;       // comment; decl: the variable; loop: the variable
  std::string type;       // decl, loop: its type
  std::string note;       // a comment after the statement (loop, branch, decl: on its line)
  std::string else_note;  // branch: a comment after "} else {"
  std::string op = "=";   // assign
  bool is_const = false, is_shared = false;  // decl
  int64_t extent = 0;     // decl: an array's length
  ExprPtr target, pointer, offset, value, start, bound, step;
  int width = 0;          // load_run, store_run, store_run_bits: elements per access
  enum class RunForm {
    whole,   // tg::load_run / tg::store_run: the array is the run
    within,  // tg::load_run_to<width> / tg::store_run_from<width>: a run within a longer array
  };
  RunForm run_form = RunForm::whole;
  bool unrolled = false;  // loop: TG_UNROLL
  bool one_line = false;  // loop: its one statement on the loop's line, without braces
  bool wrap = false;      // eval of a call: its arguments one a line where the call passes 100 columns
  Block body, orelse;
};

// Statement builders.
Stmt comment(std::string text);
Stmt decl(std::string type, std::string var, ExprPtr value, bool is_const = true);
Stmt array(std::string type, std::string var, int64_t extent);
Stmt assign(ExprPtr target, ExprPtr value, std::string op = "=");
Stmt store(ExprPtr pointer, ExprPtr offset, ExprPtr value);
// A run of `width` elements in one access: into `array` (an array, or a place in one) from
// pointer's element `offset`, or out of it; a packed mask's run of bits.
Stmt load_run(ExprPtr pointer, ExprPtr offset, ExprPtr array, int width, Stmt::RunForm form = Stmt::RunForm::whole);
Stmt store_run(ExprPtr pointer, ExprPtr offset, ExprPtr array, int width, Stmt::RunForm form = Stmt::RunForm::whole);
Stmt store_run_bits(ExprPtr pointer, ExprPtr offset, ExprPtr bits, int width);
Stmt eval(ExprPtr value);
Stmt loop(std::string type, std::string var, ExprPtr start, ExprPtr bound, ExprPtr step, Block body, bool unrolled = false);
Stmt branch(ExprPtr cond, Block body, Block orelse = {});
Stmt barrier();

// A parameter as a signature writes it.
struct Param {
  std::string type;  // "const float* __restrict__", "int64_t", "float&"
  std::string name;
};

// A __device__ function: a pointwise kernel's element body, which its run loop and its element
// loop both call.
struct Function {
  std::string name;
  std::vector<Param> params;
  Block body;
};

// How a kernel is launched: `block` threads a block, and a block for every `items_per_block` of
// its `items` (tg::grid_for), or `fixed_grid` blocks where the problem fixes them (partial sums).
// A kernel taking its count at run time (`n` or `rows`, its last parameter) has it as `count`, an
// expression over the symbols; its items are then count / count_per_item, rounded up. A row
// kernel taking its row length at run time (`row_length`, after the count) has it as `row_length`.
struct Launch {
  int block = 0;
  int64_t items = 0;
  int items_per_block = 0;
  int64_t fixed_grid = 0;
  const SizeExpr* count = nullptr;
  int count_per_item = 1;
  const SizeExpr* row_length = nullptr;
  std::vector<std::string> size_parameters;  // the symbols' sizes it takes (sz_<symbol>, dv_<symbol>), in order
  // A row kernel streaming rows of that length element by element: `block` threads at most, and
  // as few as a warp where the row is shorter (tg::row_block), as a kernel specialised to a row
  // length takes.
  bool block_by_row = false;
  bool int_sizes = false;  // its count, row length and sizes are int (where its indexes fit one)
};

// Where a kernel of a folder taking its sizes at run time may run, checked at its launch: the
// pointers its run loop reads or writes a run at a time 16-byte aligned, and the sizes its lanes'
// index code reads multiples of the run's length (a pointwise kernel); its rows no longer than it
// holds (a row kernel holding rows of a run-time length in registers).
struct RunCondition {
  std::vector<size_t> aligned;         // those pointers, as places in the kernel's params
  std::vector<std::string> multiples;  // those sizes, as size parameters (sz_<symbol>)
  int lanes = 0;                       // the run's length
  int64_t longest_row = 0;             // the most elements a row may have (0: any)
};

// A kernel that runs only where its condition holds is two kernels with the same params: the
// kernel itself, launched where the condition holds, and its twin, launched elsewhere. Each gets
// the registers its own loops need (docs/symbolic-shapes.md):
//   elementwise  a pointwise kernel's element loop alone: that loop, dividing by run-time sizes,
//                would otherwise set the count for the runs too;
//   streamed     a row kernel streaming its rows, for those too long for the registers the
//                kernel holds them in.
struct Twin {
  enum class Kind { elementwise, streamed };
  Kind kind = Kind::elementwise;
  std::string name;
  Block body;
  RunCondition condition;
  bool block_by_row = false;  // its launch's block, as Launch::block_by_row
};

struct Kernel {
  std::string name;
  std::vector<std::string> header;  // its opening comment lines: what it does, the trace lines it implements
  std::optional<Function> element;
  std::vector<Param> params;
  Block body;
  Launch launch;
  std::optional<Twin> twin;
};

// The names statements and expressions read or declare: what a lowering asks where it must
// decide which loop dims and parameters a body needs (no scanning of printed code).
void collect_names(const Expr& e, std::set<std::string>& out);
void collect_names(const Block& block, std::set<std::string>& out);
std::set<std::string> names_in(const Block& block);
// Calls `visit` on every expression of `block`, and of the blocks and expressions within.
void for_each_expr(const Block& block, const std::function<void(const Expr&)>& visit);

}  // namespace tg::kir
