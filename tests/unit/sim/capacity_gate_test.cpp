#include <tokenradar/sim/capacity_gate.hpp>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace tokenradar::sim {
namespace {

using Kind = Admission::Kind;

TEST(CapacityGate, AdmitsQueuesRejects) {
    CapacityGate gate(2, 2);
    EXPECT_EQ(gate.admit().kind, Kind::run);
    EXPECT_EQ(gate.admit().kind, Kind::run);
    auto q1 = gate.admit();
    auto q2 = gate.admit();
    EXPECT_EQ(q1.kind, Kind::queued);
    EXPECT_EQ(q2.kind, Kind::queued);
    EXPECT_NE(q1.ticket, q2.ticket);
    EXPECT_EQ(gate.admit().kind, Kind::reject);
    EXPECT_EQ(gate.running(), 2);
    EXPECT_EQ(gate.queued(), 2);
    // FIFO: the first release wakes the oldest waiter; the slot passes on.
    EXPECT_EQ(gate.release(), q1.ticket);
    EXPECT_EQ(gate.running(), 2);
    EXPECT_EQ(gate.admit().kind, Kind::queued);  // queue had room again
    EXPECT_EQ(gate.release(), q2.ticket);
    EXPECT_EQ(gate.queued(), 1);
}

TEST(CapacityGate, ReleaseWithoutWaitersFreesASlot) {
    CapacityGate gate(1, 0);
    EXPECT_EQ(gate.admit().kind, Kind::run);
    EXPECT_EQ(gate.admit().kind, Kind::reject);  // queue_limit 0: no waiting at all
    EXPECT_EQ(gate.release(), std::nullopt);
    EXPECT_EQ(gate.running(), 0);
    EXPECT_EQ(gate.admit().kind, Kind::run);
}

TEST(CapacityGate, CancelLeavesTheQueue) {
    CapacityGate gate(1, 3);
    gate.admit();
    auto a = gate.admit();
    auto b = gate.admit();
    EXPECT_TRUE(gate.cancel(a.ticket));
    EXPECT_FALSE(gate.cancel(a.ticket));
    EXPECT_EQ(gate.release(), b.ticket);
    EXPECT_FALSE(gate.cancel(b.ticket));  // already woken: it holds the slot
}

TEST(CapacityGate, UnlimitedAlwaysRuns) {
    CapacityGate gate(0, 0);
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(gate.admit().kind, Kind::run);
    EXPECT_EQ(gate.running(), 1000);
}

TEST(CapacityGate, ThreadSafeBookkeeping) {
    CapacityGate gate(4, 1'000'000);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 1000; ++i) gate.admit();
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(gate.running(), 4);
    EXPECT_EQ(gate.queued(), 3996);
    int woken = 0;
    while (gate.release()) ++woken;
    EXPECT_EQ(woken, 3996);
    EXPECT_EQ(gate.running(), 3);
}

}  // namespace
}  // namespace tokenradar::sim
