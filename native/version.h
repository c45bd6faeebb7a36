// Which runnel this is: the version (project() in CMakeLists.txt) and the git commit it
// was built from, for `runnel --version`, `runnel inspect` and the server's /health.
#pragma once

#include <string>
#include <string_view>

namespace runnel {

// "0.1.0".
std::string_view version_number();
// The short commit of the checkout at build time ("0125666"), or "unknown" when the
// sources were not a git checkout (native/build_info.cmake).
std::string_view git_commit();
// "runnel 0.1.0 (commit 0125666)".
std::string version_string();

}  // namespace runnel
