// The runtime library of the native MPI collectives (see fx.distributed.native) and the
// kernel that calls it: C, with string.Template placeholders. Sections:
//   library  compiled once per machine and loaded with global symbols (native.bind): the
//            MPI handle type ${handle} (int32_t or void*), the sizes of the handle tables,
//            ${n_types} (native.DTYPES), ${n_ops} and ${n_comms} (communicators), and
//            ${byte_type}, the entry of uint8 in the types table.
//   kernel   one all-reduce of a program, the CKernel ${name} (native._kernel): the element
//            type ${ctype}, ${count} elements, the handle table entries ${type}, ${op} and
//            ${comm}, ${what} the collective's name as a C string literal.
//   gather   one all-gather: ${nbytes} bytes from each process, the rest as in kernel;
//   reduce_scatter  a psum_scatter: ${count} elements to each process, summed;
//   alltoall ${nbytes} bytes to each process;
//   permute  a ppermute of ${nbytes} bytes: ${dest} and ${source}, per rank, the process it
//            sends to and receives from (-1: none), as C initializers.
//@ library

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef ${handle} fx_mpi_handle;
typedef int (*fx_mpi_allreduce_fn)(const void*, void*, int, fx_mpi_handle, fx_mpi_handle,
                                   fx_mpi_handle);
typedef int (*fx_mpi_allgather_fn)(const void*, int, fx_mpi_handle, void*, int,
                                   fx_mpi_handle, fx_mpi_handle);
typedef int (*fx_mpi_reduce_scatter_fn)(const void*, void*, int, fx_mpi_handle, fx_mpi_handle,
                                        fx_mpi_handle);
typedef int (*fx_mpi_alltoall_fn)(const void*, int, fx_mpi_handle, void*, int, fx_mpi_handle,
                                  fx_mpi_handle);
typedef int (*fx_mpi_sendrecv_fn)(const void*, int, fx_mpi_handle, int, int, void*, int,
                                  fx_mpi_handle, int, int, fx_mpi_handle, void*);
typedef int (*fx_mpi_abort_fn)(fx_mpi_handle, int);
typedef int (*fx_mpi_error_string_fn)(int, char*, int*);

/* Filled by fx.distributed.native.bind: this process's MPI, and the communicators programs
   run collectives on (the process group's, and the sub-communicators of mesh axes), each
   with this process's rank and size in it. */
struct fx_mpi_group {
  fx_mpi_allreduce_fn allreduce;
  fx_mpi_allgather_fn allgather;
  fx_mpi_reduce_scatter_fn reduce_scatter;
  fx_mpi_alltoall_fn alltoall;
  fx_mpi_sendrecv_fn sendrecv;
  fx_mpi_abort_fn abort;
  fx_mpi_error_string_fn error_string;
  fx_mpi_handle types[${n_types}];
  fx_mpi_handle ops[${n_ops}];
  void* in_place;
  int proc_null;
  int world_rank, world_size;
  fx_mpi_handle comms[${n_comms}];
  int ranks[${n_comms}], sizes[${n_comms}];
};
struct fx_mpi_group fx_mpi_group;

/* The running collective, for the transport's watchdog: its start (ns of CLOCK_MONOTONIC,
   0 when none runs) and its name. */
volatile int64_t fx_mpi_started_ns;
const char* volatile fx_mpi_what;

static void fx_mpi_start(const char* what) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  fx_mpi_what = what;
  fx_mpi_started_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* After a collective: clear the watchdog's note; on an MPI error name the collective and the
   rank, and abort the job (the other processes would wait for this one). */
static void fx_mpi_done(int rc, int comm, const char* what) {
  fx_mpi_started_ns = 0;
  if (rc != 0) {
    const struct fx_mpi_group* g = &fx_mpi_group;
    char message[512] = "";
    int length = 0;
    g->error_string(rc, message, &length);
    fprintf(stderr, "fx.distributed: %s failed on rank %d of %d (rank %d of %d of its "
            "communicator): %s; aborting every process\n", what, g->world_rank,
            g->world_size, g->ranks[comm], g->sizes[comm], message);
    fflush(stderr);
    g->abort(g->comms[comm], 1);
  }
}

void fx_mpi_allreduce(const void* x, void* y, int64_t n, int type, int op, int comm,
                      const char* what) {
  const struct fx_mpi_group* g = &fx_mpi_group;
  fx_mpi_start(what);
  int rc = g->allreduce(x == y ? g->in_place : x, y, (int)n, g->types[type], g->ops[op],
                        g->comms[comm]);
  fx_mpi_done(rc, comm, what);
}

/* Every process's n bytes of x, in rank order, into y (n * size bytes). */
void fx_mpi_allgather(const void* x, void* y, int64_t n, int comm, const char* what) {
  const struct fx_mpi_group* g = &fx_mpi_group;
  fx_mpi_start(what);
  int rc = g->allgather(x, (int)n, g->types[${byte_type}], y, (int)n, g->types[${byte_type}],
                        g->comms[comm]);
  fx_mpi_done(rc, comm, what);
}

/* Row r (n elements) of the sum of every process's x (size rows) into y, r this process's
   rank. */
void fx_mpi_reduce_scatter(const void* x, void* y, int64_t n, int type, int comm,
                           const char* what) {
  const struct fx_mpi_group* g = &fx_mpi_group;
  fx_mpi_start(what);
  int rc = g->reduce_scatter(x, y, (int)n, g->types[type], g->ops[0] /* sum */,
                             g->comms[comm]);
  fx_mpi_done(rc, comm, what);
}

/* Row j (n bytes) of x to process j; row j of y from process j. */
void fx_mpi_alltoall(const void* x, void* y, int64_t n, int comm, const char* what) {
  const struct fx_mpi_group* g = &fx_mpi_group;
  fx_mpi_start(what);
  int rc = g->alltoall(x, (int)n, g->types[${byte_type}], y, (int)n, g->types[${byte_type}],
                       g->comms[comm]);
  fx_mpi_done(rc, comm, what);
}

/* x (n bytes) to process dest[r], y from process source[r] (r this process's rank; -1: none,
   and y is zeros). */
void fx_mpi_permute(const void* x, void* y, int64_t n, const int* dest, const int* source,
                    int comm, const char* what) {
  const struct fx_mpi_group* g = &fx_mpi_group;
  int to = dest[g->ranks[comm]], from = source[g->ranks[comm]];
  /* Room for an MPI_Status of any implementation (Open MPI's is 24 bytes, MPICH's 20). */
  int64_t status[32];
  if (from < 0) memset(y, 0, (size_t)n);
  fx_mpi_start(what);
  int rc = g->sendrecv(x, (int)n, g->types[${byte_type}], to < 0 ? g->proc_null : to, 0, y,
                       (int)n, g->types[${byte_type}], from < 0 ? g->proc_null : from, 0,
                       g->comms[comm], status);
  fx_mpi_done(rc, comm, what);
}
//@ kernel

void fx_mpi_allreduce(const void* x, void* y, int64_t n, int type, int op, int comm,
                      const char* what);
void ${name}(const ${ctype}* x, ${ctype}* y) {
  fx_mpi_allreduce(x, y, ${count}, ${type}, ${op}, ${comm}, ${what});
}
//@ gather

void fx_mpi_allgather(const void* x, void* y, int64_t n, int comm, const char* what);
void ${name}(const ${ctype}* x, ${ctype}* y) {
  fx_mpi_allgather(x, y, ${nbytes}, ${comm}, ${what});
}
//@ reduce_scatter

void fx_mpi_reduce_scatter(const void* x, void* y, int64_t n, int type, int comm,
                           const char* what);
void ${name}(const ${ctype}* x, ${ctype}* y) {
  fx_mpi_reduce_scatter(x, y, ${count}, ${type}, ${comm}, ${what});
}
//@ alltoall

void fx_mpi_alltoall(const void* x, void* y, int64_t n, int comm, const char* what);
void ${name}(const ${ctype}* x, ${ctype}* y) {
  fx_mpi_alltoall(x, y, ${nbytes}, ${comm}, ${what});
}
//@ permute

void fx_mpi_permute(const void* x, void* y, int64_t n, const int* dest, const int* source,
                    int comm, const char* what);
void ${name}(const ${ctype}* x, ${ctype}* y) {
  static const int dest[] = {${dest}}, source[] = {${source}};
  fx_mpi_permute(x, y, ${nbytes}, dest, source, ${comm}, ${what});
}
