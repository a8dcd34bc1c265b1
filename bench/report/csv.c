/*
 * results.csv: workload,impl,n,metric,value,unit, then the spread and the
 * note: min,max,reps,note. value is the median of the repetitions; an empty
 * value always comes with a note saying why.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "output.h"

/* A CSV field in double quotes, inner quotes doubled. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void put_number(FILE *f, const struct result *r, double v)
{
    if (r->reps)
        fprintf(f, "%.6g", v);
}

static void put_row(FILE *f, const struct result *r)
{
    fprintf(f, "%s,%s,%llu,%s,", r->wl->name, r->im->name,
            (unsigned long long)r->n, r->name);
    put_number(f, r, r->median);
    fprintf(f, ",%s,", r->wl->metrics[r->metric].unit);
    put_number(f, r, r->min);
    fputc(',', f);
    put_number(f, r, r->max);
    fprintf(f, ",%u,", r->reps);
    put_quoted(f, r->note);
    fputc('\n', f);
}

bool output_csv(const struct results *rs, const char *dir)
{
    FILE *f = output_open(dir, "results.csv");

    if (!f)
        return false;
    fprintf(f, "workload,impl,n,metric,value,unit,min,max,reps,note\n");
    for (size_t i = 0; i < rs->n; i++)
        put_row(f, &rs->r[i]);
    return fclose(f) == 0;
}

FILE *output_open(const char *dir, const char *name)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "twbench: %s: %s\n", path, strerror(errno));
    return f;
}
