#include "core/ids.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

namespace reef {
namespace {

std::span<const std::uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

TEST(IdsTest, Sha256OfEmptyInputMatchesFips180Vector) {
  EXPECT_EQ(Sha256Hex(Bytes("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(IdsTest, Sha256OfAbcMatchesFips180Vector) {
  const Sha256Digest d = Sha256(Bytes("abc"));
  EXPECT_EQ(d[0], 0xba);
  EXPECT_EQ(HexLower(d), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(IdsTest, HexLowerWritesTwoLowercaseDigitsPerByte) {
  const std::uint8_t bytes[] = {0x00, 0xab, 0x0f, 0xf0};
  EXPECT_EQ(HexLower(bytes), "00ab0ff0");
}

TEST(IdsTest, NewNanoIdIsValidAndUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto id = NewNanoId();
    ASSERT_TRUE(id.ok());
    EXPECT_TRUE(IsValidNanoId(*id)) << *id;
    seen.insert(*id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(IdsTest, NewNanoIdUsesTheWholeAlphabet) {
  // Given 2,000 ids (42,000 symbols, ~656 per symbol expected)
  std::set<char> symbols;
  for (int i = 0; i < 2000; ++i) {
    const std::string id = *NewNanoId();
    symbols.insert(id.begin(), id.end());
  }
  // Then every one of the 64 symbols appears
  EXPECT_EQ(symbols.size(), 64u);
}

TEST(IdsTest, NanoIdValidationChecksLengthAndAlphabet) {
  EXPECT_TRUE(IsValidNanoId("abcdefghijklmnopqrstu"));
  EXPECT_TRUE(IsValidNanoId("_____________________"));
  EXPECT_FALSE(IsValidNanoId("abcdefghijklmnopqrst"));
  EXPECT_FALSE(IsValidNanoId("abcdefghijklmnopqrstuv"));
  EXPECT_FALSE(IsValidNanoId("abcdefghijklmnopqrst="));
  EXPECT_FALSE(IsValidNanoId("abcdefghijklmnopqrst\xc3"));
  EXPECT_EQ(ValidateNanoId("abc").code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace reef
