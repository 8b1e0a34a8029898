// The runtime library of the native MPI collectives (see fx.distributed.native) and the
// kernel that calls it: C, with string.Template placeholders. Sections:
//   library  compiled once per machine and loaded with global symbols (native.bind): the
//            MPI handle type ${handle} (int32_t or void*) and the sizes of the handle tables,
//            ${n_types} (native.DTYPES) and ${n_ops}.
//   kernel   one collective of a program, the CKernel ${name} (native._kernel): the element
//            type ${ctype}, ${count} elements, the handle table entries ${type} and ${op},
//            ${what} the collective's name as a C string literal.
//@ library

#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef ${handle} fx_mpi_handle;
typedef int (*fx_mpi_allreduce_fn)(const void*, void*, int, fx_mpi_handle, fx_mpi_handle,
                                   fx_mpi_handle);
typedef int (*fx_mpi_abort_fn)(fx_mpi_handle, int);
typedef int (*fx_mpi_error_string_fn)(int, char*, int*);

/* Filled by fx.distributed.native.bind: this process's MPI. */
struct fx_mpi_group {
  fx_mpi_allreduce_fn allreduce;
  fx_mpi_abort_fn abort;
  fx_mpi_error_string_fn error_string;
  fx_mpi_handle comm;
  fx_mpi_handle types[${n_types}];
  fx_mpi_handle ops[${n_ops}];
  void* in_place;
  int rank, size;
};
struct fx_mpi_group fx_mpi_group;

/* The running collective, for the transport's watchdog: its start (ns of CLOCK_MONOTONIC,
   0 when none runs) and its name. */
volatile int64_t fx_mpi_started_ns;
const char* volatile fx_mpi_what;

void fx_mpi_allreduce(const void* x, void* y, int64_t n, int type, int op, const char* what) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  fx_mpi_what = what;
  fx_mpi_started_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  const struct fx_mpi_group* g = &fx_mpi_group;
  int rc = g->allreduce(x == y ? g->in_place : x, y, (int)n, g->types[type], g->ops[op],
                        g->comm);
  fx_mpi_started_ns = 0;
  if (rc != 0) {
    char message[512] = "";
    int length = 0;
    g->error_string(rc, message, &length);
    fprintf(stderr, "fx.distributed: %s failed on rank %d of %d: %s; aborting every "
            "process\n", what, g->rank, g->size, message);
    fflush(stderr);
    g->abort(g->comm, 1);
  }
}
//@ kernel

void fx_mpi_allreduce(const void* x, void* y, int64_t n, int type, int op, const char* what);
void ${name}(const ${ctype}* x, ${ctype}* y) {
  fx_mpi_allreduce(x, y, ${count}, ${type}, ${op}, ${what});
}
