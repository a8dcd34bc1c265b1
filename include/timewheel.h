/*
 * timewheel: timing wheels for C11. The way in: it includes every layer's
 * header. Each layer is a room of its own (lib/README.md has the map):
 *
 *   timewheel/core.h      the caller-driven wheel (libtimewheel)
 *   timewheel/service.h   the threaded service (libtimewheel-service)
 *   timewheel/loop.h      helpers for event loops (libtimewheel-loop)
 *   timewheel/purgatory.h delayed operations watched by keys
 *                         (libtimewheel-purgatory)
 *   timewheel/store.h     delayed messages that survive a crash, on disk
 *                         (libtimewheel-store)
 *
 * Include only the header of the layer you use to keep what you link small;
 * each header names its library and pkg-config module.
 */
#ifndef TIMEWHEEL_H
#define TIMEWHEEL_H

#include "timewheel/core.h"
#include "timewheel/loop.h"
#include "timewheel/purgatory.h"
#include "timewheel/service.h"
#include "timewheel/store.h"

#endif /* TIMEWHEEL_H */
