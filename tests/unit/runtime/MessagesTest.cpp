// M2N and N2M wire format: exact layout, zero-token messages, malformed input.
#include "runtime/exchange/Messages.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace disagmoe;

TEST(Messages, M2nLayoutIsCountIdsActivationsThenRoutes) {
  M2nMessage m;
  m.tokenIds = {3, 9};
  m.x = {1, 2, 3, 4}; // hidden 2
  m.routes = {{{1, 0.75f}}, {{0, 0.5f}, {6, 0.25f}}};
  const Bytes bytes = packM2n(m, 2);
  // 8 count + 2*8 ids + 4*4 x + (8 + 12) + (8 + 24) routes.
  ASSERT_EQ(bytes.size(), 8u + 16 + 16 + 20 + 32);
  int64_t count, id1, nLocal2, expert;
  float x3, gate;
  std::memcpy(&count, bytes.data(), 8);
  std::memcpy(&id1, bytes.data() + 16, 8);
  std::memcpy(&x3, bytes.data() + 24 + 12, 4);
  std::memcpy(&nLocal2, bytes.data() + 40 + 20, 8);
  std::memcpy(&expert, bytes.data() + 40 + 20 + 8 + 12, 8);
  std::memcpy(&gate, bytes.data() + 40 + 20 + 8 + 12 + 8, 4);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(id1, 9);
  EXPECT_EQ(x3, 4);
  EXPECT_EQ(nLocal2, 2);
  EXPECT_EQ(expert, 6);
  EXPECT_EQ(gate, 0.25f);

  M2nMessage back = unpackM2n(bytes, 2);
  EXPECT_EQ(back.tokenIds, m.tokenIds);
  EXPECT_EQ(back.x, m.x);
  ASSERT_EQ(back.routes.size(), 2u);
  EXPECT_EQ(back.routes[1][1].expert, 6);
  EXPECT_EQ(back.routes[1][1].gate, 0.25f);
}

TEST(Messages, ZeroTokenMessagesAreJustTheCount) {
  const Bytes m2n = packM2n({}, 64);
  const Bytes n2m = packRows({}, 64);
  EXPECT_EQ(m2n.size(), 8u);
  EXPECT_EQ(n2m.size(), 8u);
  EXPECT_TRUE(unpackM2n(m2n, 64).tokenIds.empty());
  EXPECT_TRUE(unpackRows(n2m, 64).rows.empty());
}

TEST(Messages, RowsRoundTrip) {
  RowsMessage m{{0, 5, 6}, {1, 2, 3, 4, 5, 6}};
  const Bytes bytes = packRows(m, 2);
  EXPECT_EQ(bytes.size(), 8u + 24 + 24);
  RowsMessage back = unpackRows(bytes, 2);
  EXPECT_EQ(back.tokenIds, m.tokenIds);
  EXPECT_EQ(back.rows, m.rows);
}

TEST(Messages, MalformedMessagesAreRejected) {
  Bytes bytes = packRows({{1, 2}, {1, 2, 3, 4}}, 2);
  Bytes truncated(bytes.begin(), bytes.end() - 1);
  EXPECT_THROW(unpackRows(truncated, 2), MessageError);
  Bytes trailing = bytes;
  trailing.push_back(0);
  EXPECT_THROW(unpackRows(trailing, 2), MessageError);
  EXPECT_THROW(unpackRows(packRows({{2, 1}, {1, 2, 3, 4}}, 2), 2), MessageError); // ids not ascending
  Bytes huge(8, 0xff);
  huge[7] = 0x7f; // count = INT64_MAX
  EXPECT_THROW(unpackM2n(huge, 2), MessageError);
  EXPECT_THROW(packRows({{1}, {1, 2, 3}}, 2), MessageError); // rows do not match count * hidden
}

TEST(Messages, TagsAreDistinctPerKindAndLayer) {
  EXPECT_NE(exchangeTag(ExchangeKind::M2n, 0), exchangeTag(ExchangeKind::N2m, 0));
  EXPECT_NE(exchangeTag(ExchangeKind::Residual, 0), exchangeTag(ExchangeKind::M2n, 1));
  EXPECT_EQ(exchangeTag(ExchangeKind::M2n, 1), 3);
}
