#include "io/hdf5_matrix.h"

#include <gtest/gtest.h>

#include "io/hdf5_table.h"
#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::io {
namespace {

using sdc::testing::TempDir;

TEST(Hdf5Matrix, ReadsBackWhatItWroteBitForBit) {
  TempDir dir;
  std::vector<MatrixEntry> entries;
  for (std::int64_t i = 0; i < 200000; ++i)
    entries.push_back({i % 1000, (i * 7919) % 3000, 1.0 / static_cast<double>(i + 1)});
  const CsrMatrix matrix = CsrMatrix::from_entries(1000, 3000, entries);
  write_csr_matrix(matrix.view(), dir / "m.h5", FilePermissions{});
  EXPECT_EQ(read_csr_matrix(dir / "m.h5"), matrix);
  const CsrMatrix empty = CsrMatrix::from_entries(4, 2, {});
  write_csr_matrix(empty.view(), dir / "empty.h5", FilePermissions{});
  EXPECT_EQ(read_csr_matrix(dir / "empty.h5"), empty);
}

TEST(Hdf5Matrix, RefusesATableAndAFileThatIsNotHdf5NamingTheFile) {
  TempDir dir;
  Table table("t", 2, 0);
  VariableInfo x;
  x.name = "x";
  x.type = VariableType::kContinuous;
  table.add_column(Column::continuous(x, {1.0, 2.0}));
  write_table(table, dir / "table.h5", Hdf5WriteOptions{});
  sdc::testing::write_text(dir / "text.h5", "not hdf5\n");
  for (const char* name : {"table.h5", "text.h5"}) {
    try {
      read_csr_matrix(dir / name);
      FAIL() << name;
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find((dir / name).string()), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(read_csr_matrix(dir / "missing.h5"), IoError);
}

}  // namespace
}  // namespace sdc::io
