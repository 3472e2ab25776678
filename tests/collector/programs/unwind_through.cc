// Unwinds that cross the collector's interposed calls, as real programs do:
//   cancel  a thread cancelled while blocked in each interposed waiting call
//           (usleep, nanosleep, poll, select, read, sleep, epoll_wait,
//           sigsuspend), then one that ends itself with pthread_exit;
//           prints "<call> ok" after each join
//   throw   a C++ exception thrown by a dl_iterate_phdr callback, caught by
//           main; prints "caught"
// Both are forced or C++ unwinds done by the process's libgcc_s through a
// frame of the collector's (which links its own unwinder in).
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>
#include <link.h>

#include <stdexcept>

namespace {
int fds[2];

void* Blocked(void* p) {
  const char* call = static_cast<const char*>(p);
  if (!strcmp(call, "usleep")) usleep(10000000);
  if (!strcmp(call, "nanosleep")) {
    timespec t{10, 0};
    nanosleep(&t, nullptr);
  }
  if (!strcmp(call, "poll")) {
    pollfd f{fds[0], POLLIN, 0};
    poll(&f, 1, 10000);
  }
  if (!strcmp(call, "select")) {
    fd_set s;
    FD_ZERO(&s);
    FD_SET(fds[0], &s);
    timeval tv{10, 0};
    select(fds[0] + 1, &s, nullptr, nullptr, &tv);
  }
  if (!strcmp(call, "read")) {
    char c;
    if (read(fds[0], &c, 1) < 0) return nullptr;
  }
  if (!strcmp(call, "sleep")) sleep(10);
  if (!strcmp(call, "epoll_wait")) {
    epoll_event ev;
    epoll_wait(epoll_create1(0), &ev, 1, 10000);
  }
  if (!strcmp(call, "sigsuspend")) {
    sigset_t s;
    sigemptyset(&s);
    sigsuspend(&s);
  }
  if (!strcmp(call, "pthread_exit")) pthread_exit(nullptr);
  return nullptr;
}

int Throw(dl_phdr_info*, size_t, void*) { throw std::runtime_error("from the callback"); }
}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "throw")) {
    try {
      dl_iterate_phdr(Throw, nullptr);
    } catch (const std::exception&) {
      printf("caught\n");
    }
    return 0;
  }
  if (strcmp(mode, "cancel") != 0 || pipe(fds) != 0) return 2;
  for (const char* call :
       {"usleep", "nanosleep", "poll", "select", "read", "sleep", "epoll_wait", "sigsuspend", "pthread_exit"}) {
    pthread_t t;
    pthread_create(&t, nullptr, Blocked, const_cast<char*>(call));
    usleep(50000);  // blocked by now
    pthread_cancel(t);
    pthread_join(t, nullptr);
    printf("%s ok\n", call);
    fflush(stdout);
  }
  return 0;
}
