/* A stand-in for a CUDA program, for the injection tests on machines with no
 * GPU: it loads the library CUDA_INJECTION64_PATH names and calls its
 * InitializeInjection, as the CUDA driver does inside cuInit.
 *
 * usage: host CODE [MODE]
 *   CODE  the exit status of this process
 *   MODE  plain (default): call InitializeInjection, exit CODE
 *         fork:  then fork(); the child exit()s with CODE+1 (so atexit
 *                handlers run in it), the parent waits for it and exits CODE
 *         spawn: then fork()+exec() this program in plain mode with code 0
 *                (a new process that runs its own injection), wait, exit CODE
 *         ranks: spawn, as two ranks of a job: WORLD_SIZE=2 in both, RANK=1
 *                in the child's environment, and RANK=0 set in this
 *                process's own after its injection started (as a program
 *                that learns its rank late does); the library reads them at
 *                exit
 *         nvtx:  then load libnvtx3interop.so.1 (NVTX_LIB names it) and
 *                push and pop 3 NVTX ranges, which makes NVTX load
 *                NVTX_INJECTION64_PATH and call InitializeInjectionNvtx2
 *         nvtx-only: the NVTX ranges, and no InitializeInjection at all
 * Prints "host PID: ..." lines on stdout.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int wait_for(pid_t p) {
  int st;
  if (waitpid(p, &st, 0) != p) return -1000;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

/* Pushes and pops 3 ranges through the NVTX library NVTX_LIB names. */
static int nvtx_ranges(void) {
  const char *nvtx = getenv("NVTX_LIB");
  void *n = nvtx ? dlopen(nvtx, RTLD_NOW | RTLD_LOCAL) : 0;
  if (!n) {
    fprintf(stderr, "host: cannot load NVTX_LIB: %s\n", nvtx ? dlerror() : "unset");
    return 1;
  }
  int (*push)(const char *) = (int (*)(const char *))dlsym(n, "nvtxRangePushA");
  int (*pop)(void) = (int (*)(void))dlsym(n, "nvtxRangePop");
  if (!push || !pop) return 1;
  for (int i = 0; i < 3; i++) {
    push("gapscope_host_range");
    pop();
  }
  printf("host %d: pushed and popped 3 NVTX ranges\n", (int)getpid());
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  int code = argc > 1 ? atoi(argv[1]) : 0;
  const char *mode = argc > 2 ? argv[2] : "plain";
  const char *lib = getenv("CUDA_INJECTION64_PATH");
  if (!lib) {
    fprintf(stderr, "host: CUDA_INJECTION64_PATH is not set\n");
    return 100;
  }
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "host: dlopen: %s\n", dlerror());
    return 101;
  }
  int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
  if (!init) {
    fprintf(stderr, "host: no InitializeInjection: %s\n", dlerror());
    return 102;
  }
  if (strcmp(mode, "nvtx-only") == 0) return nvtx_ranges() != 0 ? 104 : code;
  int r = init();
  printf("host %d: InitializeInjection returned %d\n", (int)getpid(), r);
  fflush(stdout);

  if (strcmp(mode, "fork") == 0) {
    /* Let the library's background threads get going, so the fork lands
     * while they run (and, in self-test mode, while one holds its lock). */
    usleep(30000);
    pid_t p = fork();
    if (p < 0) return 103;
    if (p == 0) {
      printf("host %d: child exiting with %d\n", (int)getpid(), code + 1);
      fflush(stdout);
      exit(code + 1);
    }
    printf("host %d: child %d exited %d\n", (int)getpid(), (int)p, wait_for(p));
  } else if (strcmp(mode, "spawn") == 0 || strcmp(mode, "ranks") == 0) {
    int ranks = strcmp(mode, "ranks") == 0;
    if (ranks) setenv("WORLD_SIZE", "2", 1);
    pid_t p = fork();
    if (p < 0) return 103;
    if (p == 0) {
      if (ranks) setenv("RANK", "1", 1);
      execl("/proc/self/exe", argv[0], "0", "plain", (char *)0);
      _exit(127);
    }
    if (ranks) setenv("RANK", "0", 1);
    printf("host %d: spawned %d exited %d\n", (int)getpid(), (int)p, wait_for(p));
  } else if (strcmp(mode, "nvtx") == 0) {
    if (nvtx_ranges() != 0) return 104;
  }
  fflush(stdout);
  return code;
}
