// templates/tg_npy.h, the .npy parser of the harness and of thunder-gen-check: every header form
// NumPy writes (files NumPy wrote, in tests/fuzz/corpus/npy/, and headers made here), and every
// refusal: versions, header lengths, the dict's syntax and keys, dtype, order, shape, data size,
// bool bytes, overflowing shapes.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tg_npy.h"

namespace npy = tg::npy;

namespace {

const std::string corpus = TG_NPY_CORPUS_DIR;

// A file's bytes: preamble (version major.0), the header padded as NumPy pads it, the data.
std::string npy_bytes(const std::string& dict, const std::string& data, int version = 1) {
  const size_t preamble = version == 1 ? 10 : 12;
  std::string header = dict + std::string((64 - (preamble + dict.size() + 1) % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += char(version);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i) out += char((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

npy::Parsed parse(const std::string& bytes, const npy::Expected& want) {
  return npy::parse(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), want);
}

// The message a refusal gives, or "accepted".
std::string refusal(const std::string& bytes, const npy::Expected& want) {
  try {
    parse(bytes, want);
    return "accepted";
  } catch (const npy::Error& e) {
    return e.what();
  }
}

const npy::Expected f32_2x3{"<f4", std::vector<int64_t>{2, 3}};
const std::string six_floats(24, '\0');

std::string dict(const std::string& descr, const std::string& order, const std::string& shape) {
  return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
}

}  // namespace

TEST_CASE("npy: files NumPy wrote are read with their dtype, shape and data") {
  struct Case {
    const char* file;
    npy::Expected want;
  };
  const Case cases[] = {
      {"f4_2x3.npy", {"<f4", std::vector<int64_t>{2, 3}}},    {"f4_2x3_v2.npy", {"<f4", std::vector<int64_t>{2, 3}}},
      {"f4_2x3_v3.npy", {"<f4", std::vector<int64_t>{2, 3}}}, {"f4_2x3_hand.npy", {"<f4", std::vector<int64_t>{2, 3}}},
      {"b1_3.npy", {"|b1", std::vector<int64_t>{3}}},         {"u1_scalar.npy", {"|u1", std::vector<int64_t>{}}},
      {"i8_4.npy", {"<i8", std::vector<int64_t>{4}}},         {"f2_2x2.npy", {"<f2", std::vector<int64_t>{2, 2}}},
      {"u2_bf16_3.npy", {"<u2", std::vector<int64_t>{3}}},    {"f8_0x3.npy", {"<f8", std::vector<int64_t>{0, 3}}},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    std::vector<unsigned char> data;
    const npy::Header h = npy::read_file(corpus + "/" + c.file, c.want, [&](const npy::Header&, size_t bytes) {
      data.resize(bytes);
      return static_cast<void*>(data.data());
    });
    CHECK(h.shape == *c.want.shape);
    CHECK(data.size() == npy::detail::data_size(h.shape, npy::detail::itemsize(c.want.descr)).value());
  }
  std::vector<float> f(6);
  npy::read_file(corpus + "/f4_2x3.npy", f32_2x3, [&](const npy::Header&, size_t) { return static_cast<void*>(f.data()); });
  CHECK(f == std::vector<float>{0, 1, 2, 3, 4, 5});
  unsigned char flags[3];
  npy::read_file(corpus + "/b1_3.npy", {"|b1", std::vector<int64_t>{3}}, [&](const npy::Header&, size_t) { return static_cast<void*>(flags); });
  CHECK((flags[0] == 1 && flags[1] == 0 && flags[2] == 1));
  // Any shape, as thunder-gen-check reads: the file's.
  const npy::Header any = npy::read_file(corpus + "/f4_2x3.npy", {"<f4", std::nullopt}, [&](const npy::Header&, size_t) { return static_cast<void*>(f.data()); });
  CHECK(any.shape == std::vector<int64_t>{2, 3});
}

TEST_CASE("npy: every form of the header dict Python reads and NumPy checks") {
  const std::pair<std::string, std::vector<int64_t>> accepted[] = {
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", {2, 3}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", {2, 3}},
      {"{'descr':'<f4','fortran_order':False,'shape':(2,3)}", {2, 3}},
      {"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}", {2, 3}},
      {"{'shape': (2, 3, ), 'descr': '<f4', 'fortran_order': False}", {2, 3}},
      {"{ 'descr' : '<f4' ,\n\t'fortran_order' : False ,\r\n 'shape' : ( 2 , 3 ) , }", {2, 3}},
      {"  {'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", {6}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6 ,)}", {6}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 6, 1)}", {1, 6, 1}},
  };
  for (const auto& [header, shape] : accepted) {
    INFO(header);
    const npy::Parsed p = parse(npy_bytes(header, six_floats), {"<f4", shape});
    CHECK(p.header.shape == shape);
    CHECK(p.data_bytes == 24);
  }
  // The scalar and empty shapes.
  CHECK(parse(npy_bytes(dict("<f8", "False", "()"), std::string(8, '\0')), {"<f8", std::vector<int64_t>{}}).data_bytes == 8);
  CHECK(parse(npy_bytes(dict("<f8", "False", "( )"), std::string(8, '\0')), {"<f8", std::vector<int64_t>{}}).data_bytes == 8);
  CHECK(parse(npy_bytes(dict("<f8", "False", "(0, 5)"), ""), {"<f8", std::vector<int64_t>{0, 5}}).data_bytes == 0);
  // One-byte types in either byte-order form; versions 2.0 and 3.0 (4-byte header length).
  CHECK(refusal(npy_bytes(dict("<u1", "False", "(2,)"), "\1\2"), {"|u1", std::vector<int64_t>{2}}) == "accepted");
  CHECK(refusal(npy_bytes(dict("|i1", "False", "(2,)"), "\1\2"), {"|i1", std::vector<int64_t>{2}}) == "accepted");
  CHECK(refusal(npy_bytes(dict("<f4", "False", "(2, 3)"), six_floats, 2), f32_2x3) == "accepted");
  CHECK(refusal(npy_bytes(dict("<f4", "False", "(2, 3)"), six_floats, 3), f32_2x3) == "accepted");
}

TEST_CASE("npy: headers that are not the dict NumPy writes are refused") {
  const std::pair<std::string, std::string> refused[] = {
      {"{'descr': '<f4', 'fortran_order': False}", "header has no 'shape' key"},
      {"{'descr': '<f4', 'shape': (2, 3)}", "header has no 'fortran_order' key"},
      {"{}", "header has no 'descr' key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (2, 3)}", "key 'shape' appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", "unknown key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", "(n) is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", "expected a tuple for 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}", "expected a non-negative integer dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (02, 3)}", "dimension 02 has a leading zero"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L)}", "dimension '2L' is not a decimal integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3,,)}", "expected a non-negative integer dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "expected ',' or ')' in the shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808, 0)}", "is 2^63 or more"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}", "expected True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3)}", "expected True or False"},
      {"{'descr': '<f\t4', 'fortran_order': False, 'shape': (2, 3)}", "a string holds a control character"},
      {"{'descr': '<\\x66', 'fortran_order': False, 'shape': (2, 3)}", "backslash"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", "expected a quoted string"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x", "text after the dict's closing '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3),, }", "expected a quoted string"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}", "expected ',' or '}' after a value"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3)}", "expected ':' after a key"},
      {"'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", "expected the dict's '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", "expected ',' or '}' after a value"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}", "expected ',' or '}' after a value"},
  };
  for (const auto& [header, message] : refused) {
    INFO(header);
    CHECK_THAT(refusal(npy_bytes(header, six_floats), f32_2x3), Catch::Contains(message));
  }
  // A string containing '\0' (the literal above ends at it) and more dimensions than NumPy allows.
  CHECK_THAT(refusal(npy_bytes(std::string("{'descr': '<f4'}\0", 17), six_floats), f32_2x3), Catch::Contains("text after the dict"));
  std::string many = "(";
  for (int i = 0; i < 65; ++i) many += "1, ";
  CHECK_THAT(refusal(npy_bytes(dict("<f4", "False", many + ")"), "\0\0\0\0"), {"<f4", std::nullopt}), Catch::Contains("more than 64 dimensions"));
  // The character the parser stopped at is named.
  CHECK_THAT(refusal(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", six_floats), f32_2x3),
             Catch::StartsWith("header, character 59: unknown key 'x'"));
}

TEST_CASE("npy: the preamble: magic, versions 1.0 to 3.0, a header length the file holds") {
  const std::string good = npy_bytes(dict("<f4", "False", "(2, 3)"), six_floats);
  auto with = [&](size_t at, char c) { std::string s = good; s[at] = c; return s; };
  CHECK_THAT(refusal(with(0, 'x'), f32_2x3), Catch::Contains("no \\x93NUMPY magic"));
  CHECK_THAT(refusal(with(6, 4), f32_2x3), Catch::Contains("format version 4.0 is not supported (1.0, 2.0 or 3.0)"));
  CHECK_THAT(refusal(with(6, 0), f32_2x3), Catch::Contains("format version 0.0 is not supported"));
  CHECK_THAT(refusal(with(7, 1), f32_2x3), Catch::Contains("format version 1.1 is not supported"));
  CHECK_THAT(refusal(good.substr(0, 5), f32_2x3), Catch::Contains("5 bytes, too short"));
  CHECK_THAT(refusal(good.substr(0, 9), f32_2x3), Catch::Contains("ends inside the header length field"));
  // 14 bytes whose length field says 4 GB: refused from the file's size, before any allocation.
  const std::string huge("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14);
  CHECK_THAT(refusal(huge, f32_2x3), Catch::Contains("header length field says 4294967295 bytes, but only 2 follow it"));
  // A header that fits the file but is longer than any real one.
  const std::string long_header = npy_bytes(dict("<f4", "False", "(2, 3)") + std::string(70000, ' '), six_floats, 2);
  CHECK_THAT(refusal(long_header, f32_2x3), Catch::Contains("this reader takes at most 65535"));
  CHECK_THAT(refusal(good.substr(0, 20), f32_2x3), Catch::Contains("header length field says 118 bytes, but only 10 follow it"));
}

TEST_CASE("npy: dtype, order, shape and data size must be exactly what is expected") {
  auto file = [&](const std::string& descr, const std::string& order, const std::string& shape, size_t bytes) {
    return npy_bytes(dict(descr, order, shape), std::string(bytes, '\0'));
  };
  CHECK(refusal(file("<f4", "False", "(2, 3)", 24), f32_2x3) == "accepted");
  CHECK(refusal(file(">f4", "False", "(2, 3)", 24), f32_2x3) == "header says dtype '>f4', expected '<f4' (big-endian data is not supported)");
  CHECK(refusal(file("<i4", "False", "(2, 3)", 24), f32_2x3) == "header says dtype '<i4', expected '<f4'");
  CHECK(refusal(file("|f4", "False", "(2, 3)", 24), f32_2x3) == "header says dtype '|f4', expected '<f4'");
  const npy::Expected u8_2{"|u1", std::vector<int64_t>{2}};
  CHECK(refusal(file(">u1", "False", "(2,)", 2), u8_2) == "accepted");  // byte order means nothing for one byte
  CHECK(refusal(file("*u1", "False", "(2,)", 2), u8_2) == "header says dtype '*u1', expected '|u1'");
  CHECK(refusal(file("u1", "False", "(2,)", 2), u8_2) == "header says dtype 'u1', expected '|u1'");
  CHECK(refusal(file("|i1", "False", "(2,)", 2), u8_2) == "header says dtype '|i1', expected '|u1'");
  CHECK(refusal(file("<f4", "True", "(2, 3)", 24), f32_2x3) == "header says fortran_order True; only C-order arrays are supported");
  // The substring matches the old reader made: (2, 3) is a prefix of (2, 3, 1), (12, 3) ends with it.
  CHECK(refusal(file("<f4", "False", "(2, 3)", 24), {"<f4", std::vector<int64_t>{2, 3, 1}}) == "header says shape (2, 3), expected (2, 3, 1)");
  CHECK(refusal(file("<f4", "False", "(2, 3, 1)", 24), f32_2x3) == "header says shape (2, 3, 1), expected (2, 3)");
  CHECK(refusal(file("<f4", "False", "(12, 3)", 144), f32_2x3) == "header says shape (12, 3), expected (2, 3)");
  CHECK(refusal(file("<f4", "False", "(6,)", 24), {"<f4", std::vector<int64_t>{}}) == "header says shape (6,), expected ()");
  CHECK(refusal(file("<f4", "False", "(2, 3)", 20), f32_2x3) == "truncated: 20 bytes of data, shape (2, 3) of '<f4' needs 24");
  CHECK(refusal(file("<f4", "False", "(2, 3)", 28), f32_2x3) == "4 bytes after the data (shape (2, 3) of '<f4' is 24 bytes)");
  // Shapes whose byte count overflows 64 bits, in elements or in bytes.
  const npy::Expected any_f32{"<f4", std::nullopt};
  CHECK_THAT(refusal(file("<f4", "False", "(4294967296, 4294967296)", 0), any_f32), Catch::EndsWith("has more bytes than fit in 64 bits"));
  CHECK_THAT(refusal(file("<f4", "False", "(4611686018427387904,)", 0), any_f32), Catch::EndsWith("has more bytes than fit in 64 bits"));
  CHECK_THAT(refusal(file("<f4", "False", "(0, 9223372036854775807)", 0), any_f32), Catch::Equals("accepted"));
}

TEST_CASE("npy: bool data is 0 or 1 in every byte") {
  const npy::Expected bools{"|b1", std::vector<int64_t>{4}};
  CHECK(refusal(npy_bytes(dict("|b1", "False", "(4,)"), std::string("\1\0\1\1", 4)), bools) == "accepted");
  const std::string bad = npy_bytes(dict("|b1", "False", "(4,)"), std::string("\1\0\2\1", 4));
  CHECK(refusal(bad, bools) == "bool element 2 (file offset 130) is 0x02, not 0 or 1");
  // u8 data may hold any byte.
  CHECK(refusal(npy_bytes(dict("|u1", "False", "(4,)"), std::string("\1\0\2\xff", 4)), {"|u1", std::vector<int64_t>{4}}) == "accepted");
}

TEST_CASE("npy: read_file names the file in every refusal") {
  const std::pair<const char*, const char*> refused[] = {
      {"bad_fortran.npy", "bad_fortran.npy: header says fortran_order True"},
      {"bad_big_endian.npy", "bad_big_endian.npy: header says dtype '>f4', expected '<f4' (big-endian"},
      {"bad_structured.npy", "bad_structured.npy: header, character 11: expected a quoted string"},
      {"bad_trailing.npy", "bad_trailing.npy: 4 bytes after the data"},
      {"bad_truncated.npy", "bad_truncated.npy: truncated: 20 bytes of data"},
      {"bad_version_4.npy", "bad_version_4.npy: format version 4.0 is not supported"},
      {"bad_header_len.npy", "bad_header_len.npy: header length field says 4294967295 bytes"},
      {"bad_dup_key.npy", "bad_dup_key.npy: header, character 59: key 'shape' appears twice"},
      {"bad_shape_not_tuple.npy", "bad_shape_not_tuple.npy: header, character 54: (n) is not a tuple"},
      {"no_such_file.npy", "no_such_file.npy: cannot open: No such file or directory"},
      {".", "/.: not a regular file"},
  };
  for (const auto& [file, message] : refused) {
    INFO(file);
    std::vector<unsigned char> data(4096);
    try {
      npy::read_file(corpus + "/" + file, f32_2x3, [&](const npy::Header&, size_t) { return static_cast<void*>(data.data()); });
      FAIL("accepted");
    } catch (const npy::Error& e) {
      CHECK_THAT(std::string(e.what()), Catch::StartsWith(corpus + "/") && Catch::Contains(message));
    }
  }
  unsigned char flags[3];
  CHECK_THROWS_WITH(npy::read_file(corpus + "/bad_bool_2.npy", {"|b1", std::vector<int64_t>{3}}, [&](const npy::Header&, size_t) { return static_cast<void*>(flags); }),
                    Catch::EndsWith("bad_bool_2.npy: bool element 1 (file offset 129) is 0x02, not 0 or 1"));
}
