// Catch2's implementation and main(), compiled once for every Catch2 test program (its
// implementation is most of a test file's compile time).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
