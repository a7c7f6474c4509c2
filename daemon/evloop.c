/* libvirt's event loop on top of sd-event (virEventRegisterImpl): libvirt's
 * handles become io sources, its timeouts time sources. No polling: an idle
 * daemon sleeps in epoll until libvirt or a client has something to say.
 * libvirt wants its free callbacks run outside the remove call, so they are
 * deferred to the next loop iteration. */
#include "config.h"

#include <errno.h>
#include <sys/epoll.h>
#include <time.h>

#include "daemon.h"
#include "kvmtune/log.h"
#include "kvmtune/util.h"

struct ev_watch {
        int id;
        bool timer;
        int fd;
        int interval_ms;                /* timers: -1 disabled, 0 every iteration */
        sd_event_source *source;
        virEventHandleCallback hcb;
        virEventTimeoutCallback tcb;
        void *opaque;
        virFreeCallback ff;
};

static sd_event *ev_loop;
static struct ev_watch **ev_watches;
static int ev_nwatch;
static int ev_next_id = 1;
static struct ev_watch **ev_pending;    /* removed after the loop finished */
static int ev_npending;

static struct ev_watch *ev_find(int id, bool timer) {
        for (int i = 0; i < ev_nwatch; i++)
                if (ev_watches[i]->id == id && ev_watches[i]->timer == timer)
                        return ev_watches[i];
        return NULL;
}

static struct ev_watch *ev_add(bool timer) {
        struct ev_watch *w = xcalloc(1, sizeof *w);

        w->id = ev_next_id++;
        w->timer = timer;
        ev_watches = xrealloc(ev_watches, (ev_nwatch + 1) * sizeof *ev_watches);
        ev_watches[ev_nwatch++] = w;
        return w;
}

static void ev_forget(struct ev_watch *w) {
        for (int i = 0; i < ev_nwatch; i++)
                if (ev_watches[i] == w) {
                        ev_watches[i] = ev_watches[--ev_nwatch];
                        return;
                }
}

static uint32_t ev_to_epoll(int events) {
        uint32_t r = 0;

        if (events & VIR_EVENT_HANDLE_READABLE)
                r |= EPOLLIN;
        if (events & VIR_EVENT_HANDLE_WRITABLE)
                r |= EPOLLOUT;
        return r;
}

static int ev_from_epoll(uint32_t revents) {
        int r = 0;

        if (revents & EPOLLIN)
                r |= VIR_EVENT_HANDLE_READABLE;
        if (revents & EPOLLOUT)
                r |= VIR_EVENT_HANDLE_WRITABLE;
        if (revents & EPOLLERR)
                r |= VIR_EVENT_HANDLE_ERROR;
        if (revents & EPOLLHUP)
                r |= VIR_EVENT_HANDLE_HANGUP;
        return r;
}

static int ev_on_io(_unused_ sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct ev_watch *w = userdata;

        w->hcb(w->id, fd, ev_from_epoll(revents), w->opaque);
        return 0;
}

/* Events 0 disables the source: epoll would still report ERR/HUP otherwise. */
static void ev_handle_set(struct ev_watch *w, int events) {
        if (events == 0) {
                sd_event_source_set_enabled(w->source, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_io_events(w->source, ev_to_epoll(events));
        sd_event_source_set_enabled(w->source, SD_EVENT_ON);
}

static int ev_add_handle(int fd, int events, virEventHandleCallback cb, void *opaque,
                         virFreeCallback ff) {
        struct ev_watch *w = ev_add(false);
        int r;

        *w = (struct ev_watch){ .id = w->id, .fd = fd, .hcb = cb, .opaque = opaque, .ff = ff };
        r = sd_event_add_io(ev_loop, &w->source, fd, ev_to_epoll(events), ev_on_io, w);
        if (r < 0) {
                log_error_errno(r, "Cannot watch libvirt fd %d", fd);
                ev_forget(w);
                free(w);
                return -1;
        }
        ev_handle_set(w, events);
        return w->id;
}

static void ev_update_handle(int id, int events) {
        struct ev_watch *w = ev_find(id, false);

        if (w)
                ev_handle_set(w, events);
}

static int ev_on_free(sd_event_source *s, void *userdata) {
        struct ev_watch *w = userdata;

        if (w->ff)
                w->ff(w->opaque);
        free(w);
        sd_event_source_disable_unref(s);
        return 0;
}

static int ev_remove(int id, bool timer) {
        struct ev_watch *w = ev_find(id, timer);
        int r;

        if (!w)
                return -1;
        ev_forget(w);
        w->source = sd_event_source_disable_unref(w->source);
        r = sd_event_add_defer(ev_loop, NULL, ev_on_free, w);
        if (r < 0) {
                /* The loop has finished (shutdown): free in evloop_flush(). */
                ev_pending = xrealloc(ev_pending, (ev_npending + 1) * sizeof *ev_pending);
                ev_pending[ev_npending++] = w;
        }
        return 0;
}

void evloop_flush(void) {
        for (int i = 0; i < ev_npending; i++) {
                if (ev_pending[i]->ff)
                        ev_pending[i]->ff(ev_pending[i]->opaque);
                free(ev_pending[i]);
        }
        free(ev_pending);
        ev_pending = NULL;
        ev_npending = 0;
}

static int ev_remove_handle(int id) {
        return ev_remove(id, false);
}

static uint64_t ev_now(void) {
        uint64_t now = 0;

        sd_event_now(ev_loop, CLOCK_MONOTONIC, &now);
        return now;
}

static void ev_timer_arm(struct ev_watch *w) {
        if (w->interval_ms < 0) {
                sd_event_source_set_enabled(w->source, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_time(w->source, ev_now() + (uint64_t)w->interval_ms * 1000);
        sd_event_source_set_enabled(w->source, SD_EVENT_ONESHOT);
}

static int ev_on_time(_unused_ sd_event_source *s, _unused_ uint64_t usec, void *userdata) {
        struct ev_watch *w = userdata;
        int id = w->id;

        w->tcb(id, w->opaque);
        /* The callback may have removed or updated the timer. */
        w = ev_find(id, true);
        if (w && sd_event_source_get_enabled(w->source, NULL) == 0)
                ev_timer_arm(w);
        return 0;
}

static int ev_add_timeout(int interval_ms, virEventTimeoutCallback cb, void *opaque,
                          virFreeCallback ff) {
        struct ev_watch *w = ev_add(true);
        int r;

        *w = (struct ev_watch){ .id = w->id, .timer = true, .interval_ms = interval_ms,
                                .tcb = cb, .opaque = opaque, .ff = ff };
        r = sd_event_add_time(ev_loop, &w->source, CLOCK_MONOTONIC, 0, 1000, ev_on_time, w);
        if (r < 0) {
                log_error_errno(r, "Cannot add libvirt timer");
                ev_forget(w);
                free(w);
                return -1;
        }
        ev_timer_arm(w);
        return w->id;
}

static void ev_update_timeout(int id, int interval_ms) {
        struct ev_watch *w = ev_find(id, true);

        if (!w)
                return;
        w->interval_ms = interval_ms;
        ev_timer_arm(w);
}

static int ev_remove_timeout(int id) {
        return ev_remove(id, true);
}

int evloop_register(sd_event *e) {
        ev_loop = e;
        virEventRegisterImpl(ev_add_handle, ev_update_handle, ev_remove_handle,
                             ev_add_timeout, ev_update_timeout, ev_remove_timeout);
        return 0;
}
