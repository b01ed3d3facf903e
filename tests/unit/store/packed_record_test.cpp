#include "../../../src/store/packed_record.hpp"

#include "../../support/store_records.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tokenradar::store {
namespace {

using ::testing::HasSubstr;
using testing::relative_to_send;

using Bytes = std::vector<std::uint8_t>;

// The fields a row keeps as columns, which unpack_record leaves alone.
Measurement columns_of(const Measurement& m) {
    Measurement c;
    c.ts_us = m.ts_us;
    c.request_id = m.request_id;
    c.client_id = m.client_id;
    c.attempt = m.attempt;
    c.labels = m.labels;
    c.status = m.status;
    return c;
}

Bytes pack(const Measurement& m) {
    Bytes buffer;
    const auto packed = pack_record(m, buffer);
    return {packed.begin(), packed.end()};
}

// Packs `m`, unpacks it into its columns and expects the record the store gives back.
void expect_round_trip(const Measurement& m) {
    const Bytes bytes = pack(m);
    Measurement back = columns_of(m);
    auto unpacked = unpack_record(bytes, back);
    ASSERT_TRUE(unpacked) << unpacked.error().message;
    EXPECT_EQ(back, relative_to_send(m));
    EXPECT_EQ(pack(back), bytes);  // one encoding per record
}

// Every optional present and every plain field non-zero.
Measurement every_field_set() {
    Measurement m = testing::full_record(7);
    m.received_us = 1'764'460'800'250'007;
    m.http_status = 200;
    return m;
}

TEST(PackedRecord, RoundTripsEveryFieldSet) {
    const Measurement m = every_field_set();
    expect_round_trip(m);
    // A gateway's record, every field set (times in ns, a 41-byte response id): 127 bytes.
    Measurement gateway = m;
    gateway.response_id = "chatcmpl-48a2fa3ec386c31eb7cb620c7d7b1234";
    EXPECT_LE(pack(gateway).size(), 130U);
}

TEST(PackedRecord, RoundTripsNoFieldSetAsTheHeaderAlone) {
    const Measurement m = testing::bare_record(1'764'460'800'000'000);
    expect_round_trip(m);
    EXPECT_EQ(pack(m).size(), 14U);  // version and 25 lengths of 0
}

TEST(PackedRecord, RoundTripsExtremeValues) {
    for (const std::int64_t v :
         {INT64_MIN, INT64_MIN + 1, std::int64_t{-1}, std::int64_t{0}, std::int64_t{1},
          std::int64_t{255}, std::int64_t{256}, INT64_MAX - 1, INT64_MAX}) {
        SCOPED_TRACE(v);
        Measurement m;
        m.t.send = 0;  // stamps are written relative to send
        m.t.sched = v;
        for (auto* stamp : {&m.t.headers, &m.t.first_chunk, &m.t.first_token, &m.t.first_answer,
                            &m.t.last_token, &m.t.done}) {
            *stamp = v;  // a present 0 (a stamp at send itself) stays present
        }
        for (auto* field : {&m.received_us, &m.connect_ns, &m.tls_ns, &m.output_events}) {
            *field = v;
        }
        for (auto* field :
             {&m.prompt_tokens, &m.cached_prompt_tokens, &m.cache_creation_tokens, &m.output_tokens,
              &m.reasoning_tokens, &m.chunk_gap_p50_ns, &m.chunk_gap_p99_ns, &m.chunk_gap_max_ns,
              &m.overhead_ns, &m.relay_p50_ns, &m.relay_max_ns}) {
            *field = v;
        }
        m.http_status = v < 0 ? INT_MIN : INT_MAX;
        expect_round_trip(m);
    }
    Measurement long_id;
    long_id.response_id = std::string(1000, 'x') + std::string("\0\xff\n", 3);
    expect_round_trip(long_id);
}

TEST(PackedRecord, StampsAreWrittenRelativeToSend) {
    Measurement m = every_field_set();
    Measurement moved = m;
    const std::int64_t later = 1'000'000'000'000;
    moved.t.send += later;
    moved.t.sched += later;
    for (auto* stamp : {&moved.t.headers, &moved.t.first_chunk, &moved.t.first_token,
                        &moved.t.first_answer, &moved.t.last_token, &moved.t.done}) {
        **stamp += later;
    }
    EXPECT_EQ(pack(m), pack(moved));
}

// Format 1, byte for byte: a change here is a new format version (packed_record.hpp).
TEST(PackedRecord, FormatOneIsStable) {
    Measurement m;
    m.response_id = "ab";
    m.http_status = 200;
    m.t.send = 1000;
    m.t.sched = 997;
    m.t.first_token = 1000;  // present, 0 after send
    m.output_tokens = 5;
    m.token_source = TokenSource::estimate;
    const Bytes expected = {
        0x01,                                      // version
        0x01, 0x12, 0x00, 0x01, 0x00, 0x00, 0x00,  // lengths of fields 0-13, two per byte
        0x10, 0x10, 0x00, 0x00, 0x00, 0x00,        // of fields 14-25
        0x04,                                      // response_id_bytes 2
        0x90, 0x01,                                // http_status 200
        0x05,                                      // sched_offset_ns -3
        0x00,                                      // first_token_ns 0 (present)
        0x0a,                                      // output_tokens 5
        0x02,                                      // token_source 1 (estimate)
        'a',  'b',
    };
    EXPECT_EQ(pack(m), expected);
    expect_round_trip(m);
}

// What unpack_record says about `bytes`: "" when they decode.
std::string problem(const Bytes& bytes) {
    Measurement m;
    auto unpacked = unpack_record(bytes, m);
    if (unpacked) return "";
    EXPECT_EQ(unpacked.error().code, make_error_code(Errc::internal));
    return unpacked.error().message;
}

TEST(PackedRecord, RefusesBytesItCannotHaveWrittenSayingWhy) {
    Measurement m;
    m.response_id = "ab";
    m.http_status = 200;
    m.output_tokens = 0;  // field 15: a present 0, one zero byte
    const Bytes good = pack(m);
    ASSERT_EQ(problem(good), "");
    const auto with = [&](std::size_t at, std::uint8_t value) {
        Bytes b = good;
        b.at(at) = value;
        return b;
    };
    EXPECT_THAT(problem({}), HasSubstr("packed fields: 0 bytes, shorter than the 14-byte header"));
    EXPECT_THAT(problem(Bytes(good.begin(), good.begin() + 13)), HasSubstr("13 bytes, shorter"));
    EXPECT_THAT(problem(with(0, 2)), HasSubstr("format version 2 is unknown"));
    EXPECT_THAT(problem(with(0, 0)), HasSubstr("format version 0 is unknown"));
    EXPECT_THAT(problem(with(2, 0x19)), HasSubstr("field 2 (http_status) is 9 bytes long"));
    EXPECT_THAT(problem(with(13, 0x10)), HasSubstr("the unused last length is not 0"));
    // http_status in 1 byte: one byte more is left for the response id than it has.
    EXPECT_THAT(problem(with(2, 0x01)),
                HasSubstr("3 bytes after the values, but the response id has 2"));
    EXPECT_THAT(problem(Bytes(good.begin(), good.end() - 1)), HasSubstr("response id has 2"));
    Bytes longer = good;
    longer.push_back('c');
    EXPECT_THAT(problem(longer), HasSubstr("3 bytes after the values, but the response id has 2"));
    Bytes cut = good;
    cut.resize(15);  // the lengths say more than is there
    EXPECT_THAT(problem(cut), HasSubstr("field 2 (http_status) ends past the 15 bytes"));
    // Not the shortest form: a plain field's 0 written as a byte, a value with a zero top byte.
    Bytes zero_plain(good.begin(), good.begin() + 14);
    zero_plain[1] = 0x00;  // response_id_bytes absent...
    zero_plain[2] = 0x01;  // ...http_status one byte: 0
    zero_plain.push_back(0x00);
    EXPECT_THAT(problem(zero_plain),
                HasSubstr("field 2 (http_status) is not in its shortest form"));
    Bytes padded(good.begin(), good.begin() + 14);
    padded[1] = 0x00;
    padded[8] = 0x20;  // output_tokens in two bytes, the top one 0
    padded.insert(padded.end(), {0x00, 0x00});
    padded[2] = 0x00;
    EXPECT_THAT(problem(padded), HasSubstr("field 15 (output_tokens) is not in its shortest form"));
    Measurement source;
    source.token_source = TokenSource::estimate;
    Bytes bad_source = pack(source);
    bad_source.back() = 0x04;  // token_source 2
    EXPECT_THAT(problem(bad_source), HasSubstr("token_source 2 is not 0 or 1"));
    Measurement status;
    status.http_status = INT_MAX;
    Bytes big_status = pack(status);
    big_status[2] = 0x05;  // http_status in 5 bytes: 2^32 - 1
    big_status.push_back(0x01);
    EXPECT_THAT(problem(big_status), HasSubstr("is not an int"));
}

// Damaged rows: random bytes, and valid records with bytes flipped, cut or added. Whatever
// decodes must be a record whose packing gives back the same bytes; nothing may read outside
// the input (ASan runs this too).
TEST(PackedRecord, ArbitraryBytesDecodeToARecordOrAnErrorNeverACrash) {
    std::mt19937_64 random(20261203);
    std::vector<Bytes> valid = {pack(every_field_set()),
                                pack(testing::bare_record(1'764'460'800'000'000)),
                                pack(testing::full_record(3))};
    const auto below = [&](std::size_t n) {
        return static_cast<std::size_t>(random() % std::max<std::size_t>(n, 1));
    };
    std::size_t decoded = 0;
    for (int i = 0; i < 200'000; ++i) {
        Bytes b = valid[below(valid.size())];
        switch (below(5)) {
            case 0:  // one byte anywhere
                b[below(b.size())] = static_cast<std::uint8_t>(random());
                break;
            case 1:  // a bit of a length
                b[1 + below(13)] ^= static_cast<std::uint8_t>(1U << below(8));
                break;
            case 2:
                b.resize(below(b.size() + 1));
                break;
            case 3:
                b.push_back(static_cast<std::uint8_t>(random()));
                break;
            default:  // anything, with a valid version byte half the time
                b.assign(below(64), 0);
                for (auto& byte : b) byte = static_cast<std::uint8_t>(random());
                if (!b.empty() && random() % 2 == 0) b[0] = kPackedVersion;
                break;
        }
        Measurement m;
        if (auto unpacked = unpack_record(b, m); unpacked) {
            ++decoded;
            ASSERT_EQ(pack(m), b) << "decoded bytes that are not the record's packing";
        }
    }
    EXPECT_GT(decoded, 0U);
}

}  // namespace
}  // namespace tokenradar::store
