// A count of global operator new calls, for tests that check a hot path does not
// allocate. alloc_counter.cpp replaces the global operator new/delete of the whole
// unit_tests binary with malloc/free plus this counter (what the default ones do
// anyway), so no other test file may replace them.
#pragma once

namespace runnel::testing {

long allocation_count();

}  // namespace runnel::testing
