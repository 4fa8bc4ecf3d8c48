// M2N and N2M wire format: exact layout, zero-token messages, malformed input; the count sent
// before each payload and its capacity bound on both sides (CountedExchange.h), over LocalComm.
#include "runtime/exchange/Messages.h"

#include "runtime/comm/local/LocalComm.h"
#include "runtime/exchange/CountedExchange.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>

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
  EXPECT_THROW(unpackRows(packRows({{2, 1}, {1, 2, 3, 4}}, 2), 2),
               MessageError); // ids not ascending
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

// ---- count before payload (CountedExchange.h) --------------------------------------------------

namespace {

using namespace std::chrono_literals;

Plan planWithExchanges() {
  Plan plan;
  plan.path = "plan.json";
  plan.exchanges.push_back(
      {"m2n.0", ExchangeKind::M2n, 0, 0, 0, 2, bytesPerTokenOf(ExchangeKind::M2n, 2, 2)});
  plan.exchanges.push_back(
      {"n2m.0", ExchangeKind::N2m, 0, 0, 0, 2, bytesPerTokenOf(ExchangeKind::N2m, 2, 2)});
  plan.exchanges.push_back({"residual.0", ExchangeKind::Residual, 0, 0, 0, 16,
                            bytesPerTokenOf(ExchangeKind::Residual, 2, 2)});
  plan.exchanges.push_back(
      {"head", ExchangeKind::Head, 0, 0, 0, 16, bytesPerTokenOf(ExchangeKind::Head, 2, 2)});
  return plan;
}

std::string messageOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const CapacityError &e) {
    return e.what();
  }
  return "no CapacityError";
}

} // namespace

TEST(CountedExchange, CountMessageIsOneLittleEndianInt64) {
  const Bytes count = packCount(5);
  ASSERT_EQ(count.size(), 8u);
  EXPECT_EQ(count, (Bytes{5, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(unpackCount(count), 5);
  EXPECT_EQ(unpackCount(packCount(0)), 0);
  EXPECT_THROW(packCount(-1), MessageError);
  EXPECT_THROW(unpackCount(Bytes(7, 0)), MessageError);
  EXPECT_THROW(unpackCount(Bytes(9, 0)), MessageError);
}

TEST(CountedExchange, PayloadIsTheMessageWithoutItsCount) {
  M2nMessage m;
  m.tokenIds = {3, 9};
  m.x = {1, 2, 3, 4}; // hidden 2
  m.routes = {{{1, 0.75f}}, {{0, 0.5f}, {6, 0.25f}}};
  const Bytes payload = packM2nPayload(m, 2);
  // 2*8 ids + 4*4 x + (8 + 12) + (8 + 24) routes: the layout test above without its 8-byte count.
  ASSERT_EQ(payload.size(), 16u + 16 + 20 + 32);
  const Bytes whole = packM2n(m, 2);
  EXPECT_EQ(Bytes(whole.begin() + 8, whole.end()), payload);
  const M2nMessage back = unpackM2nPayload(payload, 2, 2);
  EXPECT_EQ(back.tokenIds, m.tokenIds);
  EXPECT_EQ(back.x, m.x);
  EXPECT_EQ(back.routes[1][1].expert, 6);
  // The count message decides how many tokens are read: any other count is a malformed payload.
  EXPECT_THROW(unpackM2nPayload(payload, 1, 2), MessageError);
  EXPECT_THROW(unpackM2nPayload(payload, 3, 2), MessageError);
  EXPECT_THROW(unpackM2nPayload(payload, INT64_MAX, 2), MessageError);

  const RowsMessage rows{{0, 5, 6}, {1, 2, 3, 4, 5, 6}};
  const Bytes rowsPayload = packRowsPayload(rows, 2);
  EXPECT_EQ(rowsPayload.size(), 24u + 24);
  EXPECT_EQ(unpackRowsPayload(rowsPayload, 3, 2).rows, rows.rows);
  EXPECT_THROW(unpackRowsPayload(rowsPayload, 2, 2), MessageError);
  EXPECT_TRUE(unpackRowsPayload({}, 0, 2).tokenIds.empty()); // a zero-token message: empty payload
}

TEST(CountedExchange, CountTravelsBeforePayloadOnTheSameTag) {
  const Plan plan = planWithExchanges();
  LocalWorld world(2);
  auto a = world.endpoint(0), b = world.endpoint(1);
  const RowsMessage m{{4, 7}, {1, 2, 3, 4}};
  const int tag = exchangeTag(ExchangeKind::N2m, 0);
  EXPECT_EQ(sendRows(*a, exchangeBound(plan, ExchangeKind::N2m, 0), 1, tag, m, 2),
            8u + 2 * 8 + 4 * 4);
  // On the wire: two messages of (0 -> 1, tag), the count first.
  EXPECT_EQ(b->recv(0, tag, 1000ms), packCount(2));
  EXPECT_EQ(b->recv(0, tag, 1000ms), packRowsPayload(m, 2));

  sendRows(*a, exchangeBound(plan, ExchangeKind::N2m, 0), 1, tag, m, 2);
  sendRows(*a, exchangeBound(plan, ExchangeKind::N2m, 0), 1, tag, {}, 2); // zero tokens: still sent
  const RowsMessage back =
      recvRows(*b, exchangeBound(plan, ExchangeKind::N2m, 0), 0, tag, 1000ms, 2);
  EXPECT_EQ(back.tokenIds, m.tokenIds);
  EXPECT_EQ(back.rows, m.rows);
  EXPECT_TRUE(
      recvRows(*b, exchangeBound(plan, ExchangeKind::N2m, 0), 0, tag, 1000ms, 2).tokenIds.empty());
}

TEST(CountedExchange, SenderRefusesACountAboveTheBoundAndSendsNothing) {
  const Plan plan = planWithExchanges();
  LocalWorld world(3);
  auto a = world.endpoint(0), f = world.endpoint(2);
  M2nMessage m;
  m.tokenIds = {0, 1, 2};
  m.x.assign(6, 1.0f);
  m.routes.assign(3, {{0, 1.0f}});
  const int tag = exchangeTag(ExchangeKind::M2n, 0);
  EXPECT_EQ(
      messageOf([&] { sendM2n(*a, exchangeBound(plan, ExchangeKind::M2n, 0), 2, tag, m, 2); }),
      "exchange m2n.0 (m2n layer 0): rank 0 would send 3 tokens to rank 2, above its capacity "
      "bound 2 "
      "(capacity_tokens; recompile with a larger --capacity-tokens, or without it for dropless "
      "bounds)");
  EXPECT_THROW(f->recv(0, tag, 50ms), CommError); // nothing was sent
  // The backward exchange of the same kind and layer has the same bound, and says so.
  EXPECT_EQ(
      messageOf([&] { sendM2n(*f, exchangeBound(plan, ExchangeKind::M2n, 0, true), 0, 99, m, 2); }),
      "exchange m2n.0 (m2n layer 0, backward): rank 2 would send 3 tokens to rank 0, above its "
      "capacity bound 2 "
      "(capacity_tokens; recompile with a larger --capacity-tokens, or without it for dropless "
      "bounds)");
  m.tokenIds.pop_back(), m.x.resize(4), m.routes.pop_back(); // 2 tokens: at the bound, sent
  sendM2n(*a, exchangeBound(plan, ExchangeKind::M2n, 0), 2, tag, m, 2);
  EXPECT_EQ(recvM2n(*f, exchangeBound(plan, ExchangeKind::M2n, 0), 0, tag, 1000ms, 2).tokenIds,
            m.tokenIds);
}

TEST(CountedExchange, ReceiverRefusesACorruptOrOversizedCountBeforeThePayload) {
  const Plan plan = planWithExchanges();
  LocalWorld world(2);
  auto a = world.endpoint(0), b = world.endpoint(1);
  const int tag = exchangeTag(ExchangeKind::N2m, 0);
  const ExchangeBound bound = exchangeBound(plan, ExchangeKind::N2m, 0);
  a->send(1, tag, packCount(5)); // a peer announcing more than the bound (no payload follows)
  EXPECT_EQ(messageOf([&] { recvRows(*b, bound, 0, tag, 1000ms, 2); }),
            "exchange n2m.0 (n2m layer 0): rank 0 announced 5 tokens for rank 1, above its "
            "capacity bound 2");
  Bytes negative(8, 0xff); // int64 -1
  a->send(1, tag, negative);
  EXPECT_EQ(
      messageOf([&] { recvRows(*b, bound, 0, tag, 1000ms, 2); }),
      "exchange n2m.0 (n2m layer 0): rank 0 announced -1 tokens for rank 1, a negative count");
  a->send(1, tag, Bytes(3, 0)); // not a count message
  EXPECT_THROW(recvRows(*b, bound, 0, tag, 1000ms, 2), MessageError);
  // A count within the bound whose payload holds another number of tokens is malformed.
  a->send(1, tag, packCount(1));
  a->send(1, tag, packRowsPayload({{1, 2}, {1, 2, 3, 4}}, 2));
  EXPECT_THROW(recvRows(*b, bound, 0, tag, 1000ms, 2), MessageError);
  // A count whose payload never comes: a plain CommError naming the exchange (never retryable).
  a->send(1, tag, packCount(1));
  try {
    recvRows(*b, bound, 0, tag, 50ms, 2);
    FAIL();
  } catch (const CommError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "exchange n2m.0 (n2m layer 0): the count 1 from rank 0 arrived but its "
                  "payload did not"),
              std::string::npos)
        << e.what();
  }
}

TEST(CountedExchange, OnlyShapeFixedExchangesAreCheckedBeforeRunning) {
  const Plan plan = planWithExchanges();
  // m2n/n2m bounds (2) are below 8 tokens per A-rank: their counts are checked per message.
  EXPECT_EQ(staticExchangeOverCapacity(plan, 8), nullptr);
  const ExchangeSpec *over = staticExchangeOverCapacity(plan, 17);
  ASSERT_NE(over, nullptr);
  EXPECT_EQ(over->id, "residual.0");
  // The embedding and head exchanges are found whatever layer the caller passes (tags use L).
  EXPECT_EQ(exchangeBound(plan, ExchangeKind::Head, 5).id, "head");
  EXPECT_THROW(exchangeBound(plan, ExchangeKind::M2n, 1), PlanError);
}
