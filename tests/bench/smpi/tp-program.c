/* tests/bench/smpi/tp-program.c — the synthetic TP-8 program of tests/bench/gen-program.sh as an
 * MPI program, so SimGrid SMPI can simulate the same work ranksim's `make bench` does (issue 29).
 *
 * Usage (under smpirun): tp-program LAYERS [sum|noop]
 * Every rank joins a TP group of 8 consecutive ranks (MPI_Comm_split on rank / 8) and repeats
 * LAYERS times: a 60 us compute ("attn"), an all_gather of 1,835,008 bf16 elements per rank, a
 * 90 us compute ("mlp"), an all_reduce of 1,835,008 bf16 elements — the sizes and durations of
 * gen-program.sh. bf16 has no MPI type: MPI_SHORT has its size (2 bytes), which is all the
 * simulated transfers depend on.
 *
 * Compute is injected as simulated time with smpi_execute() (run with
 * --cfg=smpi/simulate-computation:no so the host's own code between calls is not timed).
 * Buffers come from SMPI_SHARED_MALLOC: all ranks share one copy and SMPI copies no payload, so
 * memory does not grow with ranks x message size (ranksim carries no payload either).
 * The reduction: "sum" (default) is MPI_SUM, which SMPI really applies to the 2-byte elements
 * (host CPU work proportional to the bytes reduced); "noop" is a commutative user operation
 * that does nothing, leaving only the simulator's own cost — the fairer comparison with a
 * simulator that models time, not data. Failure: any MPI error aborts (MPI_ERRORS_ARE_FATAL).
 */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    TP_SIZE = 8,            /* gen-program.sh: one group per 8 ranks */
    COUNT = 1835008,        /* gen-program.sh: count of both collectives, elements per rank */
};

static const double ATTN_S = 60e-6; /* gen-program.sh: {op: compute, name: attn, us: 60} */
static const double MLP_S = 90e-6;  /* gen-program.sh: {op: compute, name: mlp, us: 90} */

static void tp_noop(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)in;
    (void)inout;
    (void)len;
    (void)type;
}

static int tp_parse_layers(int argc, char **argv)
{
    if (argc < 2)
        return 100;
    char *end = NULL;
    long v = strtol(argv[1], &end, 10);
    if (!end || *end || v < 1 || v > 1000000) {
        fprintf(stderr, "tp-program: LAYERS must be 1..1000000, got '%s'\n", argv[1]);
        return -1;
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int layers = tp_parse_layers(argc, argv);
    if (layers < 0)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int noop = argc > 2 && strcmp(argv[2], "noop") == 0;

    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm tp;
    MPI_Comm_split(MPI_COMM_WORLD, rank / TP_SIZE, rank, &tp);
    int tp_n = 0;
    MPI_Comm_size(tp, &tp_n);

    MPI_Op sum = MPI_SUM;
    if (noop)
        MPI_Op_create(tp_noop, 1, &sum);
    short *in = SMPI_SHARED_MALLOC(sizeof(short) * COUNT);
    short *gathered = SMPI_SHARED_MALLOC(sizeof(short) * COUNT * (size_t)tp_n);
    short *reduced = SMPI_SHARED_MALLOC(sizeof(short) * COUNT);

    for (int l = 0; l < layers; l++) {
        smpi_execute(ATTN_S);
        MPI_Allgather(in, COUNT, MPI_SHORT, gathered, COUNT, MPI_SHORT, tp);
        smpi_execute(MLP_S);
        MPI_Allreduce(in, reduced, COUNT, MPI_SHORT, sum, tp);
    }

    if (rank == 0)
        printf("tp-program: %d layers, simulated time %.6f s\n", layers, MPI_Wtime());
    SMPI_SHARED_FREE(reduced);
    SMPI_SHARED_FREE(gathered);
    SMPI_SHARED_FREE(in);
    if (noop)
        MPI_Op_free(&sum);
    MPI_Comm_free(&tp);
    MPI_Finalize();
    return 0;
}
