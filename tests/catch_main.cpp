// Catch2's main lives alone: it takes ~20 s to compile and never changes.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
