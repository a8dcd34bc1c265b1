#define _DEFAULT_SOURCE /* mkdtemp, usleep */
/*
 * broker_delayed: a broker's delayed-message flow over the durable timer
 * store (timewheel/store.h), as a user builds it:
 *
 *   cc broker_delayed.c $(pkg-config --cflags --libs timewheel-store)
 *
 * The broker keeps each message in its log and stores a reference (here a
 * log offset) in the store. It acknowledges a producer only once the
 * schedule is durable (the done callback), publishes each message when its
 * delay has passed (the delivery callback), and acks the delivery once it
 * is published. Then the broker "restarts": messages scheduled before the
 * close and due during the downtime are delivered right after the reopen.
 *
 *   broker_delayed [DIR]      (default: a new directory under /tmp)
 * Exits 0 when every message was published once, after its deadline.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <timewheel/store.h>

#define MESSAGES 6

static atomic_int acked_producers, published, early;

static uint64_t wall_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The schedule is on disk: now the broker may answer its producer. */
static void producer_ack(struct tw_store_id id, int err, void *arg)
{
    (void)arg;
    if (err) {
        fprintf(stderr, "delayed message %llu not stored: %s\n",
                (unsigned long long)id.seq, strerror(-err));
        return;
    }
    atomic_fetch_add(&acked_producers, 1);
}

/* Due: publish the message its reference names, then ack the delivery. */
static void publish(struct tw_store *s, struct tw_store_id id,
                    const void *payload, size_t len, void *arg)
{
    uint64_t offset, now = wall_ns();

    (void)arg;
    if (len != sizeof offset)
        return;
    memcpy(&offset, payload, sizeof offset);
    if (now < id.deadline_ns)
        atomic_fetch_add(&early, 1);
    printf("published the message at log offset %llu, %.1f ms after its "
           "deadline\n",
           (unsigned long long)offset, (double)(now - id.deadline_ns) / 1e6);
    atomic_fetch_add(&published, 1);
    tw_store_ack(s, id, NULL, NULL);
}

static struct tw_store *broker_open(const char *dir)
{
    struct tw_store_config cfg;
    struct tw_store *s;
    int err;

    tw_store_config_init(&cfg); /* group commit every 10 ms at most */
    cfg.deliver = publish;
    s = tw_store_open(dir, &cfg, &err);
    if (!s)
        fprintf(stderr, "open %s: %s\n", dir, strerror(-err));
    return s;
}

static int produce(struct tw_store *s, uint64_t first_offset, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t offset = first_offset + (uint64_t)i;
        uint64_t delay = tw_msec((uint64_t)(100 + 50 * i));
        int rc = tw_store_schedule_after(s, delay, &offset, sizeof offset,
                                         producer_ack, NULL, NULL);

        if (rc)
            return rc;
    }
    return tw_store_sync(s); /* wait for the producers' acks, for the demo */
}

int main(int argc, char **argv)
{
    char tmp[] = "/tmp/broker-delayed-XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmp);
    struct tw_store *s;

    if (!dir || !(s = broker_open(dir)))
        return 1;
    /* Half the messages are published while the broker runs... */
    if (produce(s, 1000, MESSAGES / 2) != 0)
        return 1;
    usleep(500000);
    /* ...the other half are due while it is down. */
    if (produce(s, 2000, MESSAGES / 2) != 0 || tw_store_close(s) != 0)
        return 1;
    printf("broker stopped with %d messages delayed\n",
           MESSAGES - atomic_load(&published));
    usleep(400000);
    if (!(s = broker_open(dir)))
        return 1;
    printf("broker restarted\n");
    for (int i = 0; i < 100 && atomic_load(&published) < MESSAGES; i++)
        usleep(10000);
    if (tw_store_close(s) != 0)
        return 1;
    printf("%d producer acks, %d published, %d early\n",
           atomic_load(&acked_producers), atomic_load(&published),
           atomic_load(&early));
    if (argc <= 1) {
        char cmd[128];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return atomic_load(&acked_producers) == MESSAGES &&
                   atomic_load(&published) == MESSAGES &&
                   atomic_load(&early) == 0
               ? 0
               : 1;
}
