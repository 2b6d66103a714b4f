// The pure parts of the REPL: words, actor refs, `let`, $actor resolution, completion context.
#include "client/repl_syntax.h"

#include <gtest/gtest.h>

namespace reef::client {
namespace {

using json = nlohmann::json;

constexpr std::string_view kId = "V1StGXR8_Z5jdHi6B-myT";
constexpr std::string_view kOtherId = "abcdefghijklmnopqrstu";

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> words;
  while (true) {
    auto word = NextWord(&line);
    EXPECT_TRUE(word.ok()) << word.status().ToString();
    if (!word.ok() || !word->has_value()) return words;
    words.push_back(**word);
  }
}

TEST(ReplSyntaxTest, NextWordSplitsOnWhitespaceAndHonoursQuotes) {
  EXPECT_EQ(Words("  commit  actors/counter -m \"two words\" 'x y'\t"),
            (std::vector<std::string>{"commit", "actors/counter", "-m", "two words", "x y"}));
  EXPECT_EQ(Words(R"(a"b c"d "q\"uote")"), (std::vector<std::string>{"ab cd", "q\"uote"}));
  EXPECT_TRUE(Words("   ").empty());
}

TEST(ReplSyntaxTest, NextWordRejectsAnUnterminatedQuote) {
  std::string_view line = "commit p -m \"oops";
  ASSERT_TRUE(NextWord(&line).ok());
  ASSERT_TRUE(NextWord(&line).ok());
  ASSERT_TRUE(NextWord(&line).ok());
  auto word = NextWord(&line);
  ASSERT_FALSE(word.ok());
  EXPECT_NE(word.status().message().find("unterminated"), std::string::npos);
}

TEST(ReplSyntaxTest, ParseActorRefAcceptsAtPrefixedAndBareNanoIds) {
  EXPECT_EQ(*ParseActorRef(std::string("@") + std::string(kId)), kId);
  EXPECT_EQ(*ParseActorRef(kId), kId);
  for (std::string_view bad :
       {"", "@", "sender", "@V1StGXR8_Z5jdHi6B-my", "V1StGXR8_Z5jdHi6B-my!"}) {
    auto ref = ParseActorRef(bad);
    EXPECT_FALSE(ref.ok()) << bad;
    EXPECT_EQ(ref.status().code(), Code::kInvalidArgument);
  }
}

TEST(ReplSyntaxTest, ResolveRefPrefersBoundNamesThenRefs) {
  Bindings bindings{{"sender", std::string(kId)}};
  EXPECT_EQ(*ResolveRef("sender", bindings), kId);
  EXPECT_EQ(*ResolveRef(std::string("@") + std::string(kOtherId), bindings), kOtherId);
  auto unknown = ResolveRef("receiver", bindings);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'receiver'"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("only inside `reef repl`"), std::string::npos);
}

TEST(ReplSyntaxTest, ActorMarkerWithBoundNameBecomesItsNanoId) {
  Bindings bindings{{"receiver", std::string(kId)}};
  json value = json::parse(R"({"op":"send","value":5,"target":{"$actor":"receiver"}})");
  ASSERT_TRUE(ResolveActorMarkers(&value, bindings).ok());
  EXPECT_EQ(value["target"], (json{{"$actor", kId}}));
  EXPECT_EQ(value["op"], "send");
}

TEST(ReplSyntaxTest, ActorMarkerWithRefIsPassedAsBareNanoId) {
  json value = json::parse(std::string(R"([{"$actor":"@)") + std::string(kId) +
                           R"("},{"$actor":")" + std::string(kOtherId) + R"("}])");
  ASSERT_TRUE(ResolveActorMarkers(&value, {}).ok());
  EXPECT_EQ(value, json::parse(std::string(R"([{"$actor":")") + std::string(kId) +
                               R"("},{"$actor":")" + std::string(kOtherId) + R"("}])"));
}

TEST(ReplSyntaxTest, OrdinaryStringsAndNonSoleKeyObjectsAreNeverConverted) {
  Bindings bindings{{"receiver", std::string(kId)}};
  json value = json::parse(R"({"name":"receiver","x":{"$actor":"receiver","other":1}})");
  json before = value;
  ASSERT_TRUE(ResolveActorMarkers(&value, bindings).ok());
  EXPECT_EQ(value, before);
}

TEST(ReplSyntaxTest, RecordWrapperKeepsItsObjectLiteralButResolvesNestedValues) {
  Bindings bindings{{"receiver", std::string(kId)}};
  json value = json::parse(R"({"$record":{"$actor":{"$actor":"receiver"}}})");
  ASSERT_TRUE(ResolveActorMarkers(&value, bindings).ok());
  EXPECT_EQ(value, (json{{"$record", {{"$actor", {{"$actor", kId}}}}}}));
  // A literal record whose key is "$actor" and value a string stays as written.
  json literal = json::parse(R"({"$record":{"$actor":"receiver"}})");
  ASSERT_TRUE(ResolveActorMarkers(&literal, bindings).ok());
  EXPECT_EQ(literal, json::parse(R"({"$record":{"$actor":"receiver"}})"));
}

TEST(ReplSyntaxTest, UnknownNameInActorMarkerNamesItsPointer) {
  json value = json::parse(R"({"list":[1,{"$actor":"nobody"}]})");
  Status status = ResolveActorMarkers(&value, {});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("/list/1"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("nobody"), std::string::npos);
}

TEST(ReplSyntaxTest, ParseJsonArgumentReportsTheBytePosition) {
  auto parsed = ParseJsonArgument(R"({"op": "add", "value": })", "MESSAGE", {});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("MESSAGE is not valid JSON (at byte 24)"),
            std::string::npos)
      << parsed.status().message();
}

TEST(ReplSyntaxTest, ParseJsonArgumentKeepsWhitespaceInsideStrings) {
  auto parsed = ParseJsonArgument(R"(  {"text": "a  b"}  )", "STATE", {});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ((*parsed)["text"], "a  b");
}

TEST(ReplSyntaxTest, ParseJsonArgumentRejectsValuesReefCannotCarry) {
  EXPECT_FALSE(ParseJsonArgument("18446744073709551615", "STATE", {}).ok());
  EXPECT_FALSE(ParseJsonArgument("", "STATE", {}).ok());
  EXPECT_FALSE(ParseJsonArgument(R"({"$record": 1})", "STATE", {}).ok());
}

TEST(ReplSyntaxTest, ParseJsonArgumentRejectsANumberBeyondADoubleInsteadOfThrowing) {
  // Given a number literal no double can hold (nlohmann throws out_of_range 406 for it),
  for (std::string_view text : {"1e400", "[1, -1e400]", R"({"n": 1e99999})"}) {
    // when it is parsed as an argument, then it is an error, not an exception.
    Result<nlohmann::json> parsed = ParseJsonArgument(text, "STATE", {});
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("STATE: number out of range"), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ReplSyntaxTest, ParseLetSplitsNameAndCommand) {
  auto let = ParseLet("let sender = spawn actors/counter 0");
  ASSERT_TRUE(let.ok());
  ASSERT_TRUE(let->has_value());
  EXPECT_EQ((*let)->name, "sender");
  EXPECT_EQ(Trim((*let)->rest), "spawn actors/counter 0");

  auto glued = ParseLet("let x=spawn a 1");
  ASSERT_TRUE(glued.ok() && glued->has_value());
  EXPECT_EQ((*glued)->name, "x");
  EXPECT_EQ(Trim((*glued)->rest), "spawn a 1");

  auto not_let = ParseLet("letter 1");
  ASSERT_TRUE(not_let.ok());
  EXPECT_FALSE(not_let->has_value());
}

TEST(ReplSyntaxTest, ParseLetRejectsBadNamesAndMissingEquals) {
  EXPECT_FALSE(ParseLet("let").ok());
  EXPECT_FALSE(ParseLet("let 9lives = spawn a 1").ok());
  EXPECT_FALSE(ParseLet("let sender spawn a 1").ok());
  EXPECT_FALSE(ParseLet(std::string("let ") + std::string(kId) + " = spawn a 1").ok());
}

TEST(ReplSyntaxTest, CompletionContextFollowsTheLine) {
  using Kind = CompletionContext::Kind;
  EXPECT_EQ(ClassifyCompletion("").kind, Kind::kCommand);
  EXPECT_EQ(ClassifyCompletion("  ").kind, Kind::kCommand);
  EXPECT_EQ(ClassifyCompletion("let sender = ").kind, Kind::kCommand);

  CompletionContext spawn_path = ClassifyCompletion("spawn ");
  EXPECT_EQ(spawn_path.kind, Kind::kArgument);
  EXPECT_EQ(spawn_path.command, "spawn");
  EXPECT_EQ(spawn_path.index, 0u);

  CompletionContext let_spawn = ClassifyCompletion("let s = spawn ");
  EXPECT_EQ(let_spawn.command, "spawn");
  EXPECT_EQ(let_spawn.index, 0u);

  CompletionContext become_path = ClassifyCompletion("become sender ");
  EXPECT_EQ(become_path.command, "become");
  EXPECT_EQ(become_path.index, 1u);

  EXPECT_EQ(ClassifyCompletion(R"(send sender {"op": "send", "target": {"$actor": ")").kind,
            Kind::kActorString);
  EXPECT_EQ(ClassifyCompletion(R"(send sender {"op": ")").kind, Kind::kArgument);
}

}  // namespace
}  // namespace reef::client
