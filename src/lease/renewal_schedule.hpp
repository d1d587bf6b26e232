#pragma once
// The keeper's timetable: which kept leases are due for renewal, which have passed their
// deadline, and when the timer thread must wake next. Pure bookkeeping on steady_clock readings
// (no clock, no lock, no I/O), unit-tested with made-up times; the keeper holds its mutex around it.
//
// Three lines of (time, version, lease), each giving its earliest entry first:
//  - `due_`:       from when a lease's renewal may go (next_renewal minus the early allowance);
//  - `wake_`:      when it must go at the latest (next_renewal): the timer wakes for these;
//  - `deadlines_`: its safe_until, kept while a renewal is on the wire too.
// Two renewal heaps, not one, because leases may have different intervals: the one that may go
// first is not always the one that must go first.
//
// Why it is cheap: a change adds one entry and a wake-up removes only what it takes, never
// reading all n leases. A line is a queue in time order plus a min-heap: leases renewed on
// schedule get times later than any before them (sent + interval, sent + TTL), so almost every
// entry joins the queue's back and leaves its front, O(1) and in memory order; one that comes
// earlier than the queue's back (a retry, a shorter interval) goes to the heap, O(log n).
// A moved or forgotten entry is not searched for: the lease's slot counts versions, an entry
// whose version is not the slot's current one is stale and dropped when it reaches the front,
// and all are swept out once they outnumber the live ones, so memory stays O(n). No trees and no
// hash maps: at 100,000 leases those missed the cache on every renewal and cost more than the
// O(n) pass they replaced (see bench/results/2026-12-02-keeper-100k-heap.md).
//
// Why it is safe: take_expired() returns every lease whose current deadline is at or before
// `now`, and next_wake() is never later than the earliest current deadline, so no lease outlives
// its deadline unnoticed. After take_expired(now) and take_due(now), next_wake() is later than
// `now` (a lease's wake time is never before its due time), so the timer never spins.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "fencelock/types.hpp"

namespace fencelock::detail {

/// Where a lease stands in a RenewalSchedule; each lease has one (`lease->schedule`), touched
/// only by the schedule.
struct ScheduleSlot {
    std::uint64_t renewal_version = 0;
    std::uint64_t deadline_version = 0;
    bool renewal_planned = false;
    bool has_deadline = false;
};

/// `Ptr` owns a lease with a `ScheduleSlot schedule` member (the keeper's shared_ptr<KeptLease>,
/// a test's shared_ptr to a small struct). Entries hold a Ptr, so a stale one never dangles.
template <class Ptr>
class RenewalSchedule {
public:
    /// Plans the lease's next renewal for `at`, replacing any plan it had. It is due (take_due
    /// returns it) from `at - early` (early >= 0): renewals due close together then share one round trip.
    void plan_renewal(const Ptr& lease, steady_time at, steady_time::duration early) {
        ScheduleSlot& s = lease->schedule;
        drop_renewal(s);
        s.renewal_planned = true;
        const std::uint64_t version = ++s.renewal_version;
        push(due_, {at - early, version, lease});
        push(wake_, {at, version, lease});
    }

    /// Sets the moment the lease is lost unless a renewal is confirmed first.
    void set_deadline(const Ptr& lease, steady_time safe_until) {
        ScheduleSlot& s = lease->schedule;
        if (s.has_deadline) ++stale_;
        else ++known_;
        s.has_deadline = true;
        push(deadlines_, {safe_until, ++s.deadline_version, lease});
    }

    /// Forgets the lease (released or lost); no-op for one it does not know.
    void forget(const Ptr& lease) {
        ScheduleSlot& s = lease->schedule;
        drop_renewal(s);
        if (s.has_deadline) {
            ++s.deadline_version;
            ++stale_;
            --known_;
            s.has_deadline = false;
        }
        compact_if_mostly_stale();
    }

    /// Appends to `out`, and forgets, every lease whose deadline is at or before `now`.
    void take_expired(steady_time now, std::vector<Ptr>& out) {
        while (top_current(deadlines_, &ScheduleSlot::deadline_version) && deadlines_.front().at <= now) {
            out.push_back(deadlines_.pop());
            ScheduleSlot& s = out.back()->schedule;
            s.has_deadline = false;  // its entry is gone: nothing left stale
            --known_;
            drop_renewal(s);
        }
    }

    /// Appends to `out` every lease whose renewal is due at `now`, in due order, and takes its
    /// renewal off the plan (its deadline stays): it is not returned again until the next
    /// plan_renewal(), which the keeper makes once the renewal's outcome is known.
    void take_due(steady_time now, std::vector<Ptr>& out) {
        while (top_current(due_, &ScheduleSlot::renewal_version) && due_.front().at <= now) {
            out.push_back(due_.pop());
            ScheduleSlot& s = out.back()->schedule;
            s.renewal_planned = false;
            ++s.renewal_version;  // its wake entry is stale now
            ++stale_;
        }
    }

    /// The earliest current deadline or planned renewal time; `otherwise` if there is none.
    steady_time next_wake(steady_time otherwise) {
        steady_time wake = otherwise;
        if (top_current(deadlines_, &ScheduleSlot::deadline_version)) wake = std::min(wake, deadlines_.front().at);
        if (top_current(wake_, &ScheduleSlot::renewal_version)) wake = std::min(wake, wake_.front().at);
        return wake;
    }

    /// Leases with a deadline: those activated and neither forgotten nor expired.
    std::size_t size() const noexcept { return known_; }
    /// Entries held, stale ones included (bounded: compacted when mostly stale).
    std::size_t entries() const noexcept { return due_.size() + wake_.size() + deadlines_.size(); }
    /// Of those, entries that came out of time order (kept in a heap, O(log n) each).
    std::size_t out_of_order() const noexcept { return due_.heap.size() + wake_.heap.size() + deadlines_.heap.size(); }

private:
    struct Entry {
        steady_time at;
        std::uint64_t version;
        Ptr lease;
    };
    struct Later {
        bool operator()(const Entry& a, const Entry& b) const noexcept { return a.at > b.at; }
    };
    /// Entries in time order: `in_order` (ascending, appended at the back) and `heap` (the ones
    /// that came too early for the back of `in_order`). front() and pop() take the earlier front.
    struct Line {
        std::deque<Entry> in_order;
        std::vector<Entry> heap;

        bool empty() const noexcept { return in_order.empty() && heap.empty(); }
        std::size_t size() const noexcept { return in_order.size() + heap.size(); }
        const Entry& front() const { return from_heap() ? heap.front() : in_order.front(); }
        void push(Entry e) {
            if (in_order.empty() || in_order.back().at <= e.at) return in_order.push_back(std::move(e));
            heap.push_back(std::move(e));
            std::push_heap(heap.begin(), heap.end(), Later{});
        }
        Ptr pop() {
            Ptr lease;
            if (from_heap()) {
                std::pop_heap(heap.begin(), heap.end(), Later{});
                lease = std::move(heap.back().lease);
                heap.pop_back();
            } else {
                lease = std::move(in_order.front().lease);
                in_order.pop_front();
            }
            return lease;
        }
        template <class Stale>
        void erase_if(Stale stale) {
            std::erase_if(in_order, stale);  // keeps the order
            std::erase_if(heap, stale);
            std::make_heap(heap.begin(), heap.end(), Later{});
        }

    private:
        bool from_heap() const noexcept {
            return !heap.empty() && (in_order.empty() || heap.front().at < in_order.front().at);
        }
    };

    void push(Line& line, Entry e) { line.push(std::move(e)); }
    /// Drops stale entries off the front; true if a current one is left there.
    bool top_current(Line& line, std::uint64_t ScheduleSlot::*version) {
        while (!line.empty() && line.front().version != line.front().lease->schedule.*version) {
            (void)line.pop();
            --stale_;
        }
        return !line.empty();
    }
    void drop_renewal(ScheduleSlot& s) {
        if (!s.renewal_planned) return;
        s.renewal_planned = false;
        ++s.renewal_version;
        stale_ += 2;  // its due and wake entries
    }
    void compact_if_mostly_stale() {
        if (stale_ < 1024 || stale_ * 2 < entries()) return;
        auto sweep = [](Line& line, std::uint64_t ScheduleSlot::*version) {
            line.erase_if([&](const Entry& e) { return e.version != e.lease->schedule.*version; });
        };
        sweep(due_, &ScheduleSlot::renewal_version);
        sweep(wake_, &ScheduleSlot::renewal_version);
        sweep(deadlines_, &ScheduleSlot::deadline_version);
        stale_ = 0;
    }

    Line due_, wake_, deadlines_;
    std::size_t stale_ = 0;  ///< entries whose version is no longer their lease's
    std::size_t known_ = 0;  ///< leases with a deadline
};

}  // namespace fencelock::detail
