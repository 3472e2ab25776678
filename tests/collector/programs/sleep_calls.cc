// Sleeps 0.3 s in each of the blocking calls the collector interposes, each
// from its own function: under --clock wall, each in_CALL function must hold
// 0.3 s with the call itself (CALL) below it, not "<cctdb collector>".
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

// The empty asm after each call keeps it from becoming a tail call, so
// in_CALL stays on the stack while CALL sleeps.
#define KEEP_FRAME() asm volatile("" ::: "memory")

extern "C" __attribute__((noinline)) void in_usleep() {
  usleep(300000);
  KEEP_FRAME();
}
extern "C" __attribute__((noinline)) void in_nanosleep() {
  timespec t{0, 300000000};
  nanosleep(&t, nullptr);
  KEEP_FRAME();
}
extern "C" __attribute__((noinline)) void in_clock_nanosleep() {
  timespec t{0, 300000000};
  clock_nanosleep(CLOCK_MONOTONIC, 0, &t, nullptr);
  KEEP_FRAME();
}
extern "C" __attribute__((noinline)) void in_poll() {
  poll(nullptr, 0, 300);
  KEEP_FRAME();
}
extern "C" __attribute__((noinline)) void in_select() {
  timeval tv{0, 300000};
  select(0, nullptr, nullptr, nullptr, &tv);
  KEEP_FRAME();
}
extern "C" __attribute__((noinline)) void in_epoll_wait() {
  const int ep = epoll_create1(0);
  epoll_event ev;
  epoll_wait(ep, &ev, 1, 300);
  close(ep);
  KEEP_FRAME();
}

int main() {
  in_usleep();
  in_nanosleep();
  in_clock_nanosleep();
  in_poll();
  in_select();
  in_epoll_wait();
  return 0;
}
