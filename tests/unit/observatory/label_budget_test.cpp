#include <tokenradar/observatory/label_budget.hpp>

#include "observatory_records.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace tokenradar::observatory {
namespace {

using test::kDay0;

constexpr std::int64_t kNow = kDay0 + 12 * kHourUs;

Measurement submitted(std::string model, std::string provider = "openai") {
    Measurement m = test::record(std::move(provider), kNow, 200);
    m.labels.model = std::move(model);
    m.labels.source = "submitted";
    return m;
}

Submission submission(std::vector<Measurement> records) {
    Submission s;
    s.total = records.size();
    for (std::size_t i = 0; i < records.size(); ++i) s.indexes.push_back(i);
    s.records = std::move(records);
    return s;
}

std::vector<std::string> models_of(const Submission& s) {
    std::vector<std::string> out;
    for (const auto& m : s.records) out.push_back(m.labels.model);
    return out;
}

struct Fixture {
    explicit Fixture(LabelBudgetOptions o) : budget(index, o) {}
    std::shared_ptr<RollupIndex> index = std::make_shared<RollupIndex>();
    LabelBudget budget;
};

TEST(LabelBudget, KnownValuesAndCellsAreAlwaysAcceptedEvenOverEveryBudget) {
    Fixture f({.new_values_per_submitter = 0,
               .max_values = 0,
               .new_cells_per_submitter = 0,
               .max_cells = 0});
    // The gateway's own records, through the index as the RollupKeeper adds them.
    f.index->add(std::vector<Measurement>{submitted("gpt-4o"), submitted("gpt-4o-mini")});
    Submission s = submission({submitted("gpt-4o"), submitted("gpt-4o-mini"), submitted("gpt-4o")});
    f.budget.apply(s, "ip:1", "", kNow);
    EXPECT_EQ(s.records.size(), 3u);
    EXPECT_TRUE(s.errors.empty());
    EXPECT_EQ(f.budget.rejected(), 0u);
}

TEST(LabelBudget, ASubmitterAddsAtMostItsNewValuesPerLabelPerDay) {
    Fixture f({.new_values_per_submitter = 2,
               .max_values = 100,
               .new_cells_per_submitter = 100,
               .max_cells = 100});
    Submission s = submission(
        {submitted("a"), submitted("b"), submitted("a"), submitted("c"), submitted("b")});
    f.budget.apply(s, "ip:1", "", kNow);
    EXPECT_EQ(models_of(s), (std::vector<std::string>{"a", "b", "a", "b"}));
    EXPECT_EQ(s.indexes, (std::vector<std::size_t>{0, 1, 2, 4}));
    ASSERT_EQ(s.errors.size(), 1u);
    EXPECT_EQ(s.errors[0].index, 3u);
    EXPECT_EQ(s.errors[0].field, "model");
    EXPECT_EQ(s.errors[0].message,
              "expected a value this observatory already has: this submitter added 2 new model "
              "values today, the most it may add in a day ([observatory] max_new_label_values)");
    EXPECT_EQ(s.total, 5u);

    // Values it added before (not yet in the index) stay known; another submitter has its
    // own budget; the next UTC day gives the first one a new one.
    Submission again = submission({submitted("a"), submitted("d")});
    f.budget.apply(again, "ip:1", "", kNow + kHourUs);
    EXPECT_EQ(models_of(again), std::vector<std::string>{"a"});
    Submission other = submission({submitted("d"), submitted("e"), submitted("f")});
    f.budget.apply(other, "ip:2", "", kNow);
    EXPECT_EQ(models_of(other), (std::vector<std::string>{"d", "e"}));
    Submission tomorrow = submission({submitted("g"), submitted("h"), submitted("i")});
    f.budget.apply(tomorrow, "ip:1", "", kNow + kDayUs);
    EXPECT_EQ(models_of(tomorrow), (std::vector<std::string>{"g", "h"}));
    EXPECT_EQ(f.budget.rejected(), 4u);
}

TEST(LabelBudget, TheTotalOfDistinctValuesIsCappedForEveryone) {
    Fixture f({.new_values_per_submitter = 10,
               .max_values = 3,
               .new_cells_per_submitter = 100,
               .max_cells = 100});
    f.index->add(std::vector<Measurement>{submitted("gateway-model")});
    Submission first = submission({submitted("a"), submitted("b"), submitted("c")});
    f.budget.apply(first, "ip:1", "", kNow);
    EXPECT_EQ(models_of(first), (std::vector<std::string>{"a", "b"}));
    ASSERT_EQ(first.errors.size(), 1u);
    EXPECT_EQ(first.errors[0].message,
              "expected a value this observatory already has: it has 3 distinct model values, "
              "the most it takes ([observatory] max_label_values)");
    // Once the index has the admitted values they are not counted twice.
    f.index->add(first.records);
    Submission second = submission({submitted("x"), submitted("a")});
    f.budget.apply(second, "ip:2", "", kNow);
    EXPECT_EQ(models_of(second), std::vector<std::string>{"a"});
    EXPECT_EQ(f.index->value_count(Label::model), 3u);
}

TEST(LabelBudget, NewCombinationsOfKnownValuesHaveTheirOwnBudget) {
    Fixture f({.new_values_per_submitter = 100,
               .max_values = 100,
               .new_cells_per_submitter = 3,
               .max_cells = 100});
    std::vector<Measurement> known;
    for (const char* p : {"p1", "p2", "p3"}) {
        for (const char* m : {"m1", "m2"}) known.push_back(submitted(m, p));
    }
    // Only the diagonal pairs are cells the index has; the rest are new combinations.
    f.index->add(std::vector<Measurement>{submitted("m1", "p1"), submitted("m2", "p2"),
                                          submitted("m1", "p3"), submitted("m3", "p1")});
    Submission s = submission(known);
    f.budget.apply(s, "ip:1", "", kNow);
    EXPECT_EQ(s.records.size(), 3u + 3u);  // three known cells, three new ones
    // (p3, m2) was admitted above; (p2, m3) is a fourth new combination of known values.
    Submission more = submission({submitted("m2", "p3"), submitted("m3", "p2")});
    f.budget.apply(more, "ip:1", "", kNow);
    EXPECT_EQ(more.records.size(), 1u);
    ASSERT_EQ(more.errors.size(), 1u);
    EXPECT_EQ(more.errors[0].field, "labels");
    EXPECT_EQ(more.errors[0].index, 1u);
}

TEST(LabelBudget, ErrorsStayInIndexOrderWithTheParsersAndTheServersRegionIsFree) {
    Fixture f({.new_values_per_submitter = 1,
               .max_values = 100,
               .new_cells_per_submitter = 100,
               .max_cells = 100});
    Submission s = submission({submitted("a"), submitted("b"), submitted("a")});
    s.indexes = {1, 3, 4};  // records 0 and 2 had parse errors, 5 was a duplicate
    s.errors = {{0, "ts_us", "x"}, {2, "model", "y"}};
    s.total = 6;
    s.duplicates = 1;
    for (auto& m : s.records) m.labels.client_region = "DE";  // GeoIP's, not the record's
    f.budget.apply(s, "ip:1", "DE", kNow);
    EXPECT_EQ(s.indexes, (std::vector<std::size_t>{1, 4}));
    ASSERT_EQ(s.errors.size(), 3u);
    EXPECT_EQ(s.errors[0].index, 0u);
    EXPECT_EQ(s.errors[1].index, 2u);
    EXPECT_EQ(s.errors[2].index, 3u);
    EXPECT_EQ(s.records.size() + s.errors.size() + s.duplicates, s.total);
}

// The label-cardinality attack, at the library level: 10 submissions of 10,000 records with unique
// 100-byte model names from one address. Before the budget every record was accepted.
TEST(LabelBudget, UniqueNamesFromOneSubmitterAddAtMostItsBudget) {
    Fixture f(LabelBudgetOptions{});
    std::size_t accepted = 0;
    for (int batch = 0; batch < 10; ++batch) {
        std::vector<Measurement> records;
        for (int i = 0; i < 10'000; ++i) {
            std::string name = std::to_string(batch * 10'000 + i);
            name.resize(100, 'x');
            records.push_back(submitted(name));
        }
        Submission s = submission(std::move(records));
        f.budget.apply(s, "ip:203.0.113.9", "", kNow);
        accepted += s.records.size();
        f.index->add(s.records);
    }
    EXPECT_EQ(accepted, LabelBudgetOptions{}.new_values_per_submitter);
    EXPECT_EQ(f.index->value_count(Label::model), LabelBudgetOptions{}.new_values_per_submitter);
    EXPECT_EQ(f.budget.rejected(), 100'000u - accepted);
}

}  // namespace
}  // namespace tokenradar::observatory
