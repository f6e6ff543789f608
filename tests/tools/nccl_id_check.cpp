// tg_ranks.h's hand-over of NCCL's unique id from rank 0 to the other ranks, without a GPU: the
// TCP way (rank 0 serving MASTER_ADDR's port, the others connecting, some before it listens) and
// the file way ($TG_NCCL_ID_FILE, the others waiting for rank 0's atomic rename), each with 4
// ranks as threads, every rank must end with rank 0's bytes. NCCL and CUDA are only linked.
//   nccl_id_check WORK_DIR
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define TG_HOST_ONLY  // (host code of a GPU build, as the harness is)
#include "tg_ranks.h"

namespace {

ncclUniqueId made_up_id(unsigned char seed) {
  ncclUniqueId id{};
  for (size_t i = 0; i < sizeof id.internal; ++i) id.internal[i] = char(seed + i * 7);
  return id;
}

// A port no one listens on now (the kernel's choice), for rank 0 to serve.
int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(s);
  return port;
}

bool same(const ncclUniqueId& a, const ncclUniqueId& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

int check(const char* way, std::vector<ncclUniqueId>& got, const ncclUniqueId& want) {
  int bad = 0;
  for (size_t r = 0; r < got.size(); ++r) {
    const bool ok = same(got[r], want);
    std::printf("%s: rank %zu %s rank 0's id\n", way, r, ok ? "has" : "DOES NOT HAVE");
    bad += !ok;
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: nccl_id_check WORK_DIR\n");
    return 2;
  }
  const int world = 4;
  int bad = 0;
  {  // TCP: ranks 1-3 start first and retry until rank 0 listens
    const ncclUniqueId id = made_up_id(11);
    const int port = free_port();
    std::vector<ncclUniqueId> got(world);
    got[0] = id;
    std::vector<std::thread> ranks;
    for (int r = 1; r < world; ++r) ranks.emplace_back([&, r] { tg::ranks::fetch_id(got[size_t(r)], "localhost", port, "nccl_id_check"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    tg::ranks::serve_id(id, world, port, "nccl_id_check");
    for (std::thread& t : ranks) t.join();
    bad += check("tcp", got, id);
  }
  {  // a shared file
    const ncclUniqueId id = made_up_id(101);
    const std::string path = std::string(argv[1]) + "/nccl_id";
    std::remove(path.c_str());
    std::vector<ncclUniqueId> got(world);
    std::vector<std::thread> ranks;
    for (int r = 1; r < world; ++r) ranks.emplace_back([&, r] { tg::ranks::share_by_file(got[size_t(r)], r, path, "nccl_id_check"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    got[0] = id;
    tg::ranks::share_by_file(got[0], 0, path, "nccl_id_check");
    for (std::thread& t : ranks) t.join();
    bad += check("file", got, id);
  }
  std::printf("%s\n", bad ? "FAILED" : "every rank got rank 0's id both ways");
  return bad ? 1 : 0;
}
