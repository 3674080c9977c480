//===- standalone_main.cpp - A harness over files, without libFuzzer ------===//
//
// The normal build links each harness with this main: it runs the harness
// on every file named on the command line (folders: every file in them), so
// `make test` replays the seed corpora and the regression inputs.
//
//===----------------------------------------------------------------------===//

#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int runFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read '%s'\n", path.c_str());
    return 1;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return 0;
}

int main(int argc, char **argv) {
  int failures = 0, inputs = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "no such file or folder '%s'\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      failures += runFile(argv[i]);
      ++inputs;
      continue;
    }
    DIR *d = opendir(argv[i]);
    while (dirent *e = d ? readdir(d) : nullptr)
      if (e->d_name[0] != '.') {
        failures += runFile(std::string(argv[i]) + "/" + e->d_name);
        ++inputs;
      }
    if (d)
      closedir(d);
  }
  std::printf("%d inputs run, none crashed\n", inputs);
  return failures ? 1 : 0;
}
