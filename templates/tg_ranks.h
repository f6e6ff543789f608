// thunder-gen harness ranks: how the harness of a distributed trace starts its ranks and their
// communicators (the entry points then take a thunder_gen_comm).
//   GPU builds: one process per rank, started as torchrun starts them: RANK, WORLD_SIZE and
//     LOCAL_RANK from the environment (the GPU is LOCAL_RANK). Rank 0 makes NCCL's unique id and
//     hands it to the others through $TG_NCCL_ID_FILE (a path every rank can read: a shared
//     folder) or, without it, a TCP connection to MASTER_ADDR on port $TG_NCCL_PORT (default
//     MASTER_PORT + 1, since torchrun's own store listens on MASTER_PORT). The same binary runs
//     on one node or several.
//   Host emulation: `--world-size N` runs N ranks as threads of this process (tg_comm.h).
// Each rank reads DIR/rank<r>/ and writes OUT/rank<r>/ (tg::Harness).
#pragma once
#include <string>
#include <vector>

#include "tg_comm.h"

#if defined(TG_ON_GPU)
#include <chrono>
#include <fstream>
#include <thread>

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#endif

namespace tg {

struct Rank {
  int rank = 0;
  int world_size = 1;
  Comm comm = nullptr;
};
using RankMain = int (*)(int argc, char** argv, const Rank& rank);

// The value of --world-size in argv, or 0 when absent; a bad value is a usage error (exit 2).
inline int world_size_flag(int argc, char** argv, const char* trace) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--world-size") continue;
    char* end = nullptr;
    const long n = i + 1 < argc ? std::strtol(argv[i + 1], &end, 10) : 0;
    if (i + 1 >= argc || *end != '\0' || n < 1 || n > 4096) {
      std::fprintf(stderr, "%s: --world-size needs a number of ranks from 1 to 4096\n", trace);
      std::exit(2);
    }
    return int(n);
  }
  return 0;
}

#if !defined(TG_ON_GPU)
// N rank threads sharing one emulated group; a rank that fails makes the others' collectives fail.
inline int run_ranks(int argc, char** argv, const char* trace, RankMain rank_main) {
  const int flag = world_size_flag(argc, argv, trace);
  const int world = flag ? flag : 1;
  EmuGroup group(world);
  std::vector<ncclComm> comms(static_cast<size_t>(world), ncclComm{&group, 0});
  std::vector<int> status(size_t(world), 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    comms[size_t(r)] = ncclComm{&group, r};
    threads.emplace_back([&, r] {
      status[size_t(r)] = rank_main(argc, argv, Rank{r, world, &comms[size_t(r)]});
      if (status[size_t(r)] != 0) group.fail();
    });
  }
  int worst = 0;
  for (int r = 0; r < world; ++r) {
    threads[size_t(r)].join();
    if (status[size_t(r)] != 0 && worst == 0) worst = status[size_t(r)];
  }
  return worst;
}
#else
namespace ranks {

[[noreturn]] inline void fail(const char* trace, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", trace, what.c_str());
  std::exit(1);
}

inline int env_int(const char* name, int fallback, const char* trace) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > (1 << 20)) fail(trace, std::string("$") + name + " is not a number: " + v);
  return int(n);
}

constexpr int kWaitSeconds = 300;  // for rank 0's id: a job's ranks start within minutes of each other

// Rank 0 writes the id to a temporary name and renames it (atomic); the others wait for the file.
inline void share_by_file(ncclUniqueId& id, int rank, const std::string& path, const char* trace) {
  if (rank == 0) {
    const std::string tmp = path + ".tmp" + std::to_string(::getpid());
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&id), sizeof id);
    out.close();
    if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) fail(trace, "cannot write $TG_NCCL_ID_FILE " + path);
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kWaitSeconds);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(reinterpret_cast<char*>(&id), sizeof id) && in.gcount() == sizeof id) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  fail(trace, "rank 0 wrote no NCCL id to $TG_NCCL_ID_FILE " + path + " within " + std::to_string(kWaitSeconds) + " s");
}

// Rank 0 listens on the port and sends the id to each of the other ranks as it connects.
inline void serve_id(const ncclUniqueId& id, int world, int port, const char* trace) {
  const int server = ::socket(AF_INET6, SOCK_STREAM, 0);
  int yes = 1, no = 0;
  ::setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  ::setsockopt(server, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);  // IPv4 clients too
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_any;
  addr.sin6_port = htons(uint16_t(port));
  if (server < 0 || ::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(server, world) != 0)
    fail(trace, "rank 0 cannot listen on port " + std::to_string(port) + " for the NCCL id (set $TG_NCCL_PORT or $TG_NCCL_ID_FILE)");
  for (int served = 1; served < world; ++served) {
    const int client = ::accept(server, nullptr, nullptr);
    if (client < 0 || ::send(client, &id, sizeof id, 0) != ssize_t(sizeof id)) fail(trace, "sending the NCCL id failed");
    ::close(client);
  }
  ::close(server);
}

inline void fetch_id(ncclUniqueId& id, const std::string& host, int port, const char* trace) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kWaitSeconds);
  while (std::chrono::steady_clock::now() < deadline) {
    addrinfo hints{}, *found = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) == 0) {
      for (addrinfo* a = found; a; a = a->ai_next) {
        const int s = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (s < 0) continue;
        size_t got = 0;
        if (::connect(s, a->ai_addr, a->ai_addrlen) == 0)
          while (got < sizeof id) {
            const ssize_t n = ::recv(s, reinterpret_cast<char*>(&id) + got, sizeof id - got, 0);
            if (n <= 0) break;
            got += size_t(n);
          }
        ::close(s);
        if (got == sizeof id) {
          ::freeaddrinfo(found);
          return;
        }
      }
      ::freeaddrinfo(found);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  fail(trace, "no NCCL id from rank 0 at " + host + ":" + std::to_string(port) + " within " + std::to_string(kWaitSeconds) + " s");
}

}  // namespace ranks

// One rank per process, as torchrun (or any launcher setting RANK, WORLD_SIZE, LOCAL_RANK) starts them.
inline int run_ranks(int argc, char** argv, const char* trace, RankMain rank_main) {
  const int world = ranks::env_int("WORLD_SIZE", 1, trace), rank = ranks::env_int("RANK", 0, trace);
  const int local = ranks::env_int("LOCAL_RANK", 0, trace);
  const int flag = world_size_flag(argc, argv, trace);
  if (flag && flag != world) ranks::fail(trace, "--world-size " + std::to_string(flag) + " differs from $WORLD_SIZE " + std::to_string(world));
  if (world < 1 || rank >= world) ranks::fail(trace, "$RANK must be below $WORLD_SIZE");
  if (cudaSetDevice(local) != cudaSuccess) ranks::fail(trace, "cannot use GPU $LOCAL_RANK " + std::to_string(local));
  ncclUniqueId id{};
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) ranks::fail(trace, "ncclGetUniqueId failed");
  if (world > 1) {
    if (const char* file = std::getenv("TG_NCCL_ID_FILE"); file && *file) {
      ranks::share_by_file(id, rank, file, trace);
    } else {
      const char* host = std::getenv("MASTER_ADDR");
      const int port = ranks::env_int("TG_NCCL_PORT", ranks::env_int("MASTER_PORT", 29500, trace) + 1, trace);
      if (rank == 0) ranks::serve_id(id, world, port, trace);
      else ranks::fetch_id(id, host && *host ? host : "127.0.0.1", port, trace);
    }
  }
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, world, id, rank) != ncclSuccess) ranks::fail(trace, "ncclCommInitRank failed");
  const int status = rank_main(argc, argv, Rank{rank, world, comm});
  ncclCommDestroy(comm);
  return status;
}
#endif

}  // namespace tg
