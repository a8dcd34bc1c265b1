#include <math.h>
#include <stdio.h>

#include "format.h"

void format_value(double v, char *buf, size_t len)
{
    double a = fabs(v);

    if (isnan(v))
        snprintf(buf, len, "-");
    else if (a >= 100 || a == 0)
        snprintf(buf, len, "%.0f", v);
    else if (a >= 10)
        snprintf(buf, len, "%.1f", v);
    else if (a >= 1)
        snprintf(buf, len, "%.2f", v);
    else if (a >= 0.001)
        snprintf(buf, len, "%.4f", v);
    else
        snprintf(buf, len, "%.3g", v);
}

void format_size(uint64_t n, char *buf, size_t len)
{
    uint64_t p = 1;
    int k = 0;

    while (p < n && k < 19) {
        p *= 10;
        k++;
    }
    if (p == n && n >= 1000)
        snprintf(buf, len, "1e%d", k);
    else
        snprintf(buf, len, "%llu", (unsigned long long)n);
}

double format_ratio(double v, double best, int higher_better)
{
    if (isnan(v) || isnan(best) || v == 0 || best == 0)
        return NAN;
    return higher_better ? best / v : v / best;
}
