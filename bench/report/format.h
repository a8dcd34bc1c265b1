/*
 * Number formatting shared by the table, the CSV, the report and the plots.
 */
#ifndef BENCH_FORMAT_H
#define BENCH_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* A measured value with about three significant digits, no exponent. */
void format_value(double v, char *buf, size_t len);
/* A size: 10^k as "1e<k>", anything else in full. */
void format_size(uint64_t n, char *buf, size_t len);
/* How many times slower than the best (>= 1), for either direction. */
double format_ratio(double v, double best, int higher_better);

#endif /* BENCH_FORMAT_H */
