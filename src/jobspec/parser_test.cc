#include "jobspec/parser.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jobspec/eval.h"

namespace drover::jobspec {
namespace {

using ::testing::HasSubstr;

File MustParse(const std::string& src) {
  absl::StatusOr<File> f = ParseFile("t.hcl", src);
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? std::move(*f) : File{};
}

std::string ErrorOf(const std::string& src) {
  absl::StatusOr<File> f = ParseFile("t.hcl", src);
  EXPECT_FALSE(f.ok()) << "parsed: " << src;
  return f.ok() ? "" : std::string(f.status().message());
}

// Evaluates the attribute `v` of a one-attribute file.
Json Value(const std::string& src) {
  File f = MustParse(src);
  const Attribute* a = f.body.FindAttribute("v");
  EXPECT_NE(a, nullptr);
  if (a == nullptr) {
    return nullptr;
  }
  Evaluator ev("t.hcl", EvalOptions{});
  absl::StatusOr<Json> v = ev.Evaluate(*a->expr);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : Json();
}

TEST(ParserTest, BlocksWithLabelsAndAttributes) {
  File f = MustParse(R"(
job "example" {
  datacenters = ["dc1"]
  group web {
    count = 2
  }
}
)");
  ASSERT_EQ(f.body.blocks.size(), 1u);
  const Block& job = f.body.blocks[0];
  EXPECT_EQ(job.type, "job");
  EXPECT_EQ(job.labels, std::vector<std::string>{"example"});
  EXPECT_EQ(job.type_range.begin.line, 2);
  EXPECT_EQ(job.type_range.begin.column, 1);
  ASSERT_EQ(job.body.attributes.size(), 1u);
  EXPECT_EQ(job.body.attributes[0].name, "datacenters");
  EXPECT_EQ(job.body.attributes[0].name_range.begin.line, 3);
  EXPECT_EQ(job.body.attributes[0].name_range.begin.column, 3);
  ASSERT_EQ(job.body.blocks.size(), 1u);
  EXPECT_EQ(job.body.blocks[0].labels, std::vector<std::string>{"web"});  // bare label
}

TEST(ParserTest, CommentsOfAllThreeKinds) {
  File f = MustParse(R"(# hash
// slashes
a = 1 # trailing
/* block
   comment */ b = 2
c = /* inline */ 3
)");
  EXPECT_EQ(f.body.attributes.size(), 3u);
}

TEST(ParserTest, QuotedArgumentNames) {
  File f = MustParse("env {\n  \"a.b\" = 1\n  \"/bin\" = \"/bin\"\n}\n");
  ASSERT_EQ(f.body.blocks[0].body.attributes.size(), 2u);
  EXPECT_EQ(f.body.blocks[0].body.attributes[0].name, "a.b");
  EXPECT_EQ(f.body.blocks[0].body.attributes[0].name_range.begin.column, 3);
  EXPECT_THAT(ErrorOf("\"${x}\" = 1\n"), HasSubstr("Invalid argument name"));
  EXPECT_THAT(ErrorOf("\"a\" {\n}\n"), HasSubstr("Invalid argument name"));
}

TEST(ParserTest, OneLineBlock) {
  File f = MustParse("resources { cpu = 100 }\n");
  ASSERT_EQ(f.body.blocks.size(), 1u);
  EXPECT_EQ(f.body.blocks[0].body.attributes.size(), 1u);
}

TEST(ParserTest, Literals) {
  EXPECT_EQ(Value("v = 42\n"), 42);
  EXPECT_EQ(Value("v = 1.5\n"), 1.5);
  EXPECT_EQ(Value("v = 1e3\n"), 1000.0);
  EXPECT_EQ(Value("v = -7\n"), -7);
  EXPECT_EQ(Value("v = true\n"), true);
  EXPECT_EQ(Value("v = false\n"), false);
  EXPECT_EQ(Value("v = null\n"), nullptr);
  EXPECT_EQ(Value("v = [1, \"a\", [true]]\n"), Json::parse(R"([1,"a",[true]])"));
  EXPECT_EQ(Value("v = [\n  1,\n  2,\n]\n"), Json::parse("[1,2]"));
  EXPECT_EQ(Value("v = { a = 1, \"b.c\" = 2, d: 3 }\n"), Json::parse(R"({"a":1,"b.c":2,"d":3})"));
  EXPECT_EQ(Value("v = {\n  a = 1\n  b = [2]\n}\n"), Json::parse(R"({"a":1,"b":[2]})"));
}

TEST(ParserTest, StringEscapes) {
  EXPECT_EQ(Value(R"(v = "a\tb\nc\"d\\e\u00e9\U0001F600")"),
            "a\tb\nc\"d\\e\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(Value(R"(v = "$${not} %%{either}")"), "${not} %{either}");
  EXPECT_EQ(Value(R"(v = "cost: $5 and 100%")"), "cost: $5 and 100%");
}

TEST(ParserTest, TemplatesInterpolate) {
  EXPECT_EQ(Value(R"(v = "a${1 + 2}b")"), "a3b");
  EXPECT_EQ(Value(R"(v = "${"nested ${"deep"}"}")"), "nested deep");
  EXPECT_EQ(Value(R"(v = "${true}-${1.5}")"), "true-1.5");
  // A template that is one interpolation yields the value itself.
  EXPECT_EQ(Value(R"(v = "${[1, 2]}")"), Json::parse("[1,2]"));
}

TEST(ParserTest, TemplateDirectivesAndStripMarkers) {
  EXPECT_EQ(Value(R"(v = "%{ if 1 > 0 }yes%{ else }no%{ endif }")"), "yes");
  EXPECT_EQ(Value(R"(v = "%{ if false }yes%{ endif }")"), "");
  EXPECT_EQ(Value(R"(v = "%{ for x in [1, 2, 3] }${x},%{ endfor }")"), "1,2,3,");
  EXPECT_EQ(Value(R"(v = "%{ for k, x in {a = 1} }${k}=${x}%{ endfor }")"), "a=1");
  // A lone interpolation inside a directive still yields text.
  EXPECT_EQ(Value(R"(v = "%{ if true }${1}%{ endif }")"), "1");
  EXPECT_EQ(Value("v = <<EOF\nhosts:\n%{ for h in [\"a\", \"b\"] ~}\n  - ${h}\n%{ endfor ~}\n"
                  "done\nEOF\n"),
            "hosts:\n- a\n- b\ndone\n");  // ~} strips the newline and the indentation
  EXPECT_EQ(Value(R"(v = "a   ${~ "b" ~}   c")"), "abc");
  // Runtime references inside directive bodies stay verbatim.
  EXPECT_EQ(Value(R"(v = "%{ if true }${NOMAD_ALLOC_ID}%{ endif }")"), "${NOMAD_ALLOC_ID}");
}

TEST(ParserTest, Heredocs) {
  EXPECT_EQ(Value("v = <<EOF\nline 1\n  line ${1 + 1}\nEOF\n"), "line 1\n  line 2\n");
  EXPECT_EQ(Value("v = <<-EOT\n    indented\n      more\n    EOT\n"), "indented\n  more\n");
  EXPECT_EQ(Value("v = <<EOF\nno ${\"escapes\"} \\n here\nEOF\n"), "no escapes \\n here\n");
  EXPECT_EQ(Value("v = <<EOF\nEOF\n"), "");
  File f = MustParse("a = <<EOF\nx\nEOF\nb = 2\n");
  EXPECT_EQ(f.body.attributes.size(), 2u);
}

TEST(ParserTest, OperatorsAndPrecedence) {
  EXPECT_EQ(Value("v = 1 + 2 * 3\n"), 7);
  EXPECT_EQ(Value("v = (1 + 2) * 3\n"), 9);
  EXPECT_EQ(Value("v = 7 / 2\n"), 3.5);
  EXPECT_EQ(Value("v = 8 / 2\n"), 4);
  EXPECT_EQ(Value("v = 7 % 3\n"), 1);
  EXPECT_EQ(Value("v = 10 - 2 - 3\n"), 5);
  EXPECT_EQ(Value("v = 1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 4 == false\n"), true);
  EXPECT_EQ(Value("v = !true || 1 != 1\n"), false);
  EXPECT_EQ(Value("v = \"a\" == \"a\"\n"), true);
  EXPECT_EQ(Value("v = \"3\" + 4\n"), 7);  // numeric strings convert
  EXPECT_EQ(Value("v = -(2 * 3)\n"), -6);
}

TEST(ParserTest, ConditionalsIndexesSplatsAndFor) {
  EXPECT_EQ(Value("v = 1 > 0 ? \"yes\" : \"no\"\n"), "yes");
  EXPECT_EQ(Value("v = [10, 20, 30][1]\n"), 20);
  EXPECT_EQ(Value("v = {a = {b = 5}}.a.b\n"), 5);
  EXPECT_EQ(Value("v = {a = [7]}[\"a\"][0]\n"), 7);
  EXPECT_EQ(Value("v = [{n = 1}, {n = 2}][*].n\n"), Json::parse("[1,2]"));
  EXPECT_EQ(Value("v = [{n = 1}, {n = 2}].*.n\n"), Json::parse("[1,2]"));
  EXPECT_EQ(Value("v = [for x in [1, 2, 3] : x * 2 if x != 2]\n"), Json::parse("[2,6]"));
  EXPECT_EQ(Value("v = [for i, x in [\"a\", \"b\"] : \"${i}${x}\"]\n"),
            Json::parse(R"(["0a","1b"])"));
  EXPECT_EQ(Value("v = {for k, x in {a = 1, b = 2} : upper(k) => x + 1}\n"),
            Json::parse(R"({"A":2,"B":3})"));
  EXPECT_EQ(Value("v = {for x in [\"a\", \"b\", \"a\"] : x => 1...}\n"),
            Json::parse(R"({"a":[1,1],"b":[1]})"));
}

TEST(ParserTest, FunctionCallsWithExpansion) {
  EXPECT_EQ(Value("v = max([3, 9, 2]...)\n"), 9);
  EXPECT_EQ(Value("v = join(\"-\", [\"a\", \"b\"])\n"), "a-b");
}

// --- Errors, with exact positions ---

TEST(ParserErrorTest, UnterminatedString) {
  EXPECT_EQ(ErrorOf("a = \"abc\n"),
            "t.hcl:1,5-9: Unterminated template string; Quoted strings may not span lines; use "
            "a heredoc (<<EOT) for multi-line text.");
  EXPECT_THAT(ErrorOf("a = \"abc"), HasSubstr("t.hcl:1,5-9: Unterminated template string"));
}

TEST(ParserErrorTest, UnterminatedHeredoc) {
  EXPECT_EQ(ErrorOf("a = <<EOF\nnever closed\n"),
            "t.hcl:1,5-2,1: Unterminated template string; No closing marker was found for the "
            "heredoc \"EOF\".");
}

TEST(ParserErrorTest, UnbalancedBraces) {
  EXPECT_THAT(ErrorOf("job \"x\" {\n  a = 1\n"),
              HasSubstr("t.hcl:3,1: Unclosed configuration block"));
  EXPECT_THAT(ErrorOf("a = 1\n}\n"),
              HasSubstr("t.hcl:2,1-2: Argument or block definition required"));
  EXPECT_THAT(ErrorOf("a = [1, 2\n"), HasSubstr("t.hcl:2,1: Unclosed bracket"));
  EXPECT_THAT(ErrorOf("a = (1 + 2\n"), HasSubstr("Unbalanced parentheses"));
}

TEST(ParserErrorTest, MissingNewlineAndBadTokens) {
  EXPECT_THAT(ErrorOf("a = 1 b = 2\n"), HasSubstr("t.hcl:1,7-8: Missing newline after argument"));
  EXPECT_THAT(ErrorOf("a = 1 @\n"), HasSubstr("t.hcl:1,7-8: Invalid character"));
  EXPECT_THAT(ErrorOf("a = 1\na = 2\n"), HasSubstr("t.hcl:2,1-2: Attribute redefined"));
  EXPECT_THAT(ErrorOf("block \"${x}\" {\n}\n"), HasSubstr("Invalid block label"));
  EXPECT_THAT(ErrorOf("a = \"\\q\"\n"), HasSubstr("t.hcl:1,6-7: Invalid escape sequence"));
  EXPECT_THAT(ErrorOf("/* open\n"), HasSubstr("Unterminated block comment"));
  EXPECT_THAT(ErrorOf("a = \"%{ if true }x\"\n"),
              HasSubstr("t.hcl:1,6-20: Unterminated template directive"));
  EXPECT_THAT(ErrorOf("a = \"x%{ endif }\"\n"),
              HasSubstr("t.hcl:1,7-17: Unexpected template directive"));
  EXPECT_THAT(ErrorOf("a = \"%{ while true }\"\n"), HasSubstr("Invalid template directive"));
  EXPECT_THAT(ErrorOf("a = \"%{ for x in [1] }x%{ endif }\"\n"),
              HasSubstr("Unterminated template directive"));
}

TEST(ParserErrorTest, InvalidUtf8IsReportedWithItsPosition) {
  EXPECT_EQ(ErrorOf("a = 1\nb = \"\xff\"\n"),
            "t.hcl:2,6: Invalid character encoding; All input files must be UTF-8 encoded.");
  EXPECT_THAT(ErrorOf("a = \"\xc0\xaf\"\n"), HasSubstr("Invalid character encoding"));  // overlong
  EXPECT_THAT(ErrorOf("a = \"\xed\xa0\x80\"\n"), HasSubstr("Invalid character encoding"));
}

TEST(ParserErrorTest, DeepNestingIsCapped) {
  std::string deep = "a = " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  EXPECT_THAT(ErrorOf(deep), HasSubstr("Nesting too deep"));
  std::string blocks;
  for (int i = 0; i < 200; ++i) {
    blocks += "b {\n";
  }
  for (int i = 0; i < 200; ++i) {
    blocks += "}\n";
  }
  EXPECT_THAT(ErrorOf(blocks), HasSubstr("Nesting too deep"));
  std::string interpolations = "a = ";
  for (int i = 0; i < 300; ++i) {
    interpolations += "\"${";
  }
  EXPECT_THAT(ErrorOf(interpolations + "\n"), HasSubstr("Nesting too deep"));
  // Right at the limit is fine.
  std::string ok =
      "a = " + std::string(kMaxNesting - 2, '[') + std::string(kMaxNesting - 2, ']') + "\n";
  EXPECT_TRUE(ParseFile("t.hcl", ok).ok());
}

TEST(ParserErrorTest, HugeFilesAreRefused) {
  std::string huge(kMaxSourceBytes + 1, '#');
  EXPECT_THAT(ErrorOf(huge), HasSubstr("the limit is"));
}

TEST(ParserTest, ExpressionEntryPoint) {
  absl::StatusOr<ExprPtr> e = ParseExpression("<v>", "[1, 2]");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_FALSE(ParseExpression("<v>", "[1, 2] x").ok());
}

}  // namespace
}  // namespace drover::jobspec

namespace drover::jobspec {
namespace {

TEST(ParserErrorTest, LongOperatorAndTraversalChainsAreCapped) {
  std::string sum = "a = 1";
  for (int i = 0; i < 100000; ++i) {
    sum += " + 1";
  }
  EXPECT_THAT(ErrorOf(sum + "\n"), HasSubstr("Nesting too deep"));
  std::string index = "a = x";
  for (int i = 0; i < 100000; ++i) {
    index += "[0]";
  }
  EXPECT_THAT(ErrorOf(index + "\n"), HasSubstr("Nesting too deep"));
  EXPECT_EQ(Value("v = 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10\n"), 55);
}

}  // namespace
}  // namespace drover::jobspec
