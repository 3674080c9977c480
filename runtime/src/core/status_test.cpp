//===- status_test.cpp - Status objects and the C boundary ----------------===//

#include "core/status.h"

#include <gtest/gtest.h>

namespace {

TEST(Status, OkIsNull) {
  EXPECT_EQ(otc::makeStatus(OTC_OK, "ignored"), nullptr);
  EXPECT_EQ(otc_status_code(nullptr), OTC_OK);
  EXPECT_STREQ(otc_status_message(nullptr), "");
  otc_status_free(nullptr);
}

TEST(Status, CarriesCodeAndMessage) {
  otc_status_t s = otc::makeStatus(OTC_DATA_LOSS, "checksum mismatch");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(otc_status_code(s), OTC_DATA_LOSS);
  EXPECT_STREQ(otc_status_message(s), "checksum mismatch");
  otc_status_free(s);
}

TEST(Status, GuardMapsExceptions) {
  EXPECT_EQ(otc::guard([] {}), nullptr);
  otc_status_t s = otc::guard(
      [] { throw otc::Error(OTC_NOT_FOUND, "no such file 'x.npy'"); });
  EXPECT_EQ(otc_status_code(s), OTC_NOT_FOUND);
  EXPECT_STREQ(otc_status_message(s), "no such file 'x.npy'");
  otc_status_free(s);
  s = otc::guard([] { throw std::runtime_error("boom"); });
  EXPECT_EQ(otc_status_code(s), OTC_INTERNAL);
  EXPECT_NE(std::string(otc_status_message(s)).find("boom"), std::string::npos);
  otc_status_free(s);
  s = otc::guard([] { throw 42; });
  EXPECT_EQ(otc_status_code(s), OTC_INTERNAL);
  otc_status_free(s);
}

TEST(Status, CodeNames) {
  EXPECT_STREQ(otc_status_code_name(OTC_DATA_LOSS), "DATA_LOSS");
  EXPECT_STREQ(otc_status_code_name(OTC_FAILED_PRECONDITION),
               "FAILED_PRECONDITION");
}

TEST(Status, NullArgumentsAreErrorsNotCrashes) {
  otc_status_t s = otc_program_from_entry(nullptr, nullptr);
  EXPECT_EQ(otc_status_code(s), OTC_INVALID_ARGUMENT);
  otc_status_free(s);
  otc_program_t *p = nullptr;
  s = otc_program_from_entry(nullptr, &p);
  EXPECT_EQ(otc_status_code(s), OTC_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr);
  otc_status_free(s);
  otc_program_release(nullptr);
  otc_comm_release(nullptr);
  otc_session_release(nullptr);
  EXPECT_EQ(otc_session_step(nullptr), 0);
}

TEST(Status, ProgramLoadNamesMissingFile) {
  otc_program_t *p = nullptr;
  otc_status_t s = otc_program_load("/nonexistent/prog.so", &p);
  EXPECT_EQ(otc_status_code(s), OTC_NOT_FOUND);
  EXPECT_NE(std::string(otc_status_message(s)).find("/nonexistent/prog.so"),
            std::string::npos);
  otc_status_free(s);
}

} // namespace
