#include "native/version.h"

// Generated into the build folder on every build (native/build_info.cmake); only this
// file includes it, so a new commit recompiles nothing else.
#include "runnel_build_info.h"

namespace runnel {

std::string_view version_number() {
  return RUNNEL_VERSION;
}

std::string_view git_commit() {
  return RUNNEL_GIT_COMMIT;
}

std::string version_string() {
  return "runnel " + std::string(version_number()) + " (commit " + std::string(git_commit()) + ")";
}

}  // namespace runnel
