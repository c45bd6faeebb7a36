// `runnel serve`'s static files: the demo page's folder (--web-root) and the model file
// the page downloads. Nothing outside the folder is served: httplib refuses `..` above
// its root, and inside_web_root() refuses what resolves outside it (a symlink).
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "native/server/server.h"

namespace runnel::server {

bool Server::inside_web_root(const std::string& path) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Strip leading slashes so that the path stays relative to the root.
  const size_t start = path.find_first_not_of('/');
  const fs::path candidate =
      fs::path(web_root_canonical_) / (start == std::string::npos ? "" : path.substr(start));
  // A path naming no file is not served from the folder: the routes (/health, /v1/...)
  // or a 404 answer it.
  if (!fs::exists(candidate, ec)) return true;
  const std::string resolved = fs::canonical(candidate, ec).string();
  if (ec) return false;
  return resolved == web_root_canonical_ || resolved.rfind(web_root_canonical_ + "/", 0) == 0;
}

void Server::serve_model_file(httplib::Server& h) {
  const std::filesystem::path file = options_.model_file;
  const std::string route = "/models/" + file.filename().string();
  h.Get(route, [file](const httplib::Request&, httplib::Response& res) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(file, ec);
    if (ec) {
      res.status = 404;
      return;
    }
    res.set_header("Cross-Origin-Resource-Policy", "same-origin");
    res.set_header("Cache-Control", "no-cache");
    // httplib answers Range requests from a sized provider (206 + Content-Range).
    res.set_content_provider(static_cast<size_t>(size), "application/octet-stream",
                             [file](size_t offset, size_t length, httplib::DataSink& sink) {
                               std::ifstream in(file, std::ios::binary);
                               in.seekg(static_cast<std::streamoff>(offset));
                               std::vector<char> buf(std::min<size_t>(length, size_t{1} << 20));
                               size_t left = length;
                               while (left > 0 && in) {
                                 const size_t n = std::min(left, buf.size());
                                 in.read(buf.data(), static_cast<std::streamsize>(n));
                                 const auto got = static_cast<size_t>(in.gcount());
                                 if (got == 0 || !sink.write(buf.data(), got)) return false;
                                 left -= got;
                               }
                               return left == 0;
                             });
  });
}

}  // namespace runnel::server
