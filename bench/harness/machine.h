/*
 * What the results were measured on, for the report.
 */
#ifndef BENCH_MACHINE_H
#define BENCH_MACHINE_H

struct machine {
    char cpu[128];
    unsigned cores;
    double mem_gib;
    char kernel[256];
    char compiler[128];
    char cflags[256];
    char allocator[64];
    char date[64];
    char perf[200]; /* instructions counter: "available" or why not */
};

void machine_probe(struct machine *m);

#endif /* BENCH_MACHINE_H */
