#include "kernels/microaggregation/blocking.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <string>

#include "kernels/core/error.h"

namespace sdc::microaggregation {

namespace {

void require_block_max(std::int64_t block_max) {
  if (block_max < 1) throw ParameterError("blocking: the largest block size must be at least 1");
}

/// New block id for each block of `sizes` (in block order) after merging every run of blocks
/// smaller than 2k forwards, and a small last run backwards.
std::vector<std::int32_t> merge_small(const std::vector<std::int64_t>& sizes, std::int64_t minimum,
                                      std::int32_t& count) {
  std::vector<std::int32_t> merged(sizes.size(), 0);
  std::int32_t next = 0;
  std::int64_t pending = 0;
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    merged[b] = next;
    pending += sizes[b];
    if (pending >= minimum) {
      ++next;
      pending = 0;
    }
  }
  if (pending > 0) {
    if (next > 0) {
      for (std::size_t b = sizes.size(); b-- > 0 && merged[b] == next;) merged[b] = next - 1;
    } else {
      ++next;
    }
  }
  count = next;
  return merged;
}

Blocks from_runs(const std::vector<std::int32_t>& raw_block, const std::vector<std::int64_t>& sizes, int k) {
  Blocks blocks;
  const auto merged = merge_small(sizes, 2 * static_cast<std::int64_t>(k), blocks.block_count);
  blocks.block_of_record.resize(raw_block.size());
  for (std::size_t i = 0; i < raw_block.size(); ++i) {
    blocks.block_of_record[i] = merged[static_cast<std::size_t>(raw_block[i])];
  }
  return blocks;
}

/// The values of the records [begin, end) of `order` along which a node is cut, in `along` (indexed
/// by record).
using CutValues = std::function<void(const std::vector<std::size_t>& order, std::size_t begin, std::size_t end,
                                     std::vector<double>& along)>;

Blocks recursive_blocks(const NumericColumns& standardised, std::int64_t block_max, int k, const char* method,
                        const CutValues& cut_values) {
  require_group_size(k, method);
  require_block_max(block_max);
  require_complete(standardised, method);
  const std::size_t n = standardised.records();
  std::vector<std::size_t> records(n);
  std::iota(records.begin(), records.end(), 0);
  std::vector<std::int32_t> raw(n, 0);
  std::vector<std::int64_t> sizes;
  std::vector<double> along(n, 0.0);
  const auto limit = static_cast<std::size_t>(block_max);
  // The two parts of a node are cut apart on threads: they hold disjoint records (of `records` and of
  // `along`), and the leaves are listed lower part first whatever the thread count.
  std::function<std::vector<std::pair<std::size_t, std::size_t>>(std::size_t, std::size_t)> leaves_of =
      [&](std::size_t begin, std::size_t end) -> std::vector<std::pair<std::size_t, std::size_t>> {
    const std::size_t size = end - begin;
    if (size <= limit) return {{begin, end}};
    cut_values(records, begin, end, along);
    // The node ends as m = ⌈size / block_max⌉ blocks; the cut leaves ⌈m/2⌉ of them below it, so that
    // blocks come out as large as the limit allows (10.2 × block_max records give 11 blocks, not 16):
    // fewer borders, fewer groups cut apart by them.
    const std::size_t parts = (size + limit - 1) / limit;
    const std::size_t middle = begin + size * ((parts + 1) / 2) / parts;
    std::nth_element(
        records.begin() + static_cast<std::ptrdiff_t>(begin), records.begin() + static_cast<std::ptrdiff_t>(middle),
        records.begin() + static_cast<std::ptrdiff_t>(end), [&](std::size_t a, std::size_t b) {
          return along[a] < along[b] || (along[a] == along[b] && standardised.row_ids[a] < standardised.row_ids[b]);
        });
    std::vector<std::pair<std::size_t, std::size_t>> lower;
    std::vector<std::pair<std::size_t, std::size_t>> upper;
    tbb::parallel_invoke([&] { lower = leaves_of(begin, middle); }, [&] { upper = leaves_of(middle, end); });
    lower.insert(lower.end(), upper.begin(), upper.end());
    return lower;
  };
  for (const auto& [begin, end] : leaves_of(0, n)) {
    for (std::size_t m = begin; m < end; ++m) raw[records[m]] = static_cast<std::int32_t>(sizes.size());
    sizes.push_back(static_cast<std::int64_t>(end - begin));
  }
  return from_runs(raw, sizes, k);
}

}  // namespace

Blocks kdtree_blocks(const NumericColumns& standardised, std::int64_t block_max, int k) {
  return recursive_blocks(
      standardised, block_max, k, "kd-tree blocking",
      [&](const std::vector<std::size_t>& order, std::size_t begin, std::size_t end, std::vector<double>& along) {
        std::size_t axis = 0;
        double widest = -1.0;
        for (std::size_t j = 0; j < standardised.variables(); ++j) {
          const auto column = standardised.columns[j];
          double low = column[order[begin]];
          double high = low;
          for (std::size_t m = begin; m < end; ++m) {
            low = std::min(low, column[order[m]]);
            high = std::max(high, column[order[m]]);
          }
          if (high - low > widest) {
            widest = high - low;
            axis = j;
          }
        }
        for (std::size_t m = begin; m < end; ++m) along[order[m]] = standardised.columns[axis][order[m]];
      });
}

Blocks principal_axis_blocks(const NumericColumns& standardised, std::int64_t block_max, int k) {
  const std::size_t p = standardised.variables();
  const auto dimension = static_cast<Eigen::Index>(p);
  return recursive_blocks(
      standardised, block_max, k, "principal-axis blocking",
      [&](const std::vector<std::size_t>& order, std::size_t begin, std::size_t end, std::vector<double>& along) {
        // Sums in the node's record order: the same records in the same order give the same axis.
        Eigen::VectorXd mean = Eigen::VectorXd::Zero(dimension);
        for (std::size_t m = begin; m < end; ++m)
          for (std::size_t j = 0; j < p; ++j) mean(static_cast<Eigen::Index>(j)) += standardised.columns[j][order[m]];
        mean /= static_cast<double>(end - begin);
        Eigen::MatrixXd covariance = Eigen::MatrixXd::Zero(dimension, dimension);
        Eigen::VectorXd centred(dimension);
        for (std::size_t m = begin; m < end; ++m) {
          for (std::size_t j = 0; j < p; ++j)
            centred(static_cast<Eigen::Index>(j)) =
                standardised.columns[j][order[m]] - mean(static_cast<Eigen::Index>(j));
          covariance.noalias() += centred * centred.transpose();
        }
        const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(covariance);
        Eigen::VectorXd axis = solver.eigenvectors().col(dimension - 1);
        Eigen::Index largest = 0;
        axis.cwiseAbs().maxCoeff(&largest);
        if (axis(largest) < 0.0) axis = -axis;
        for (std::size_t m = begin; m < end; ++m) {
          double value = 0.0;
          for (std::size_t j = 0; j < p; ++j)
            value += axis(static_cast<Eigen::Index>(j)) * standardised.columns[j][order[m]];
          along[order[m]] = value;
        }
      });
}

Blocks ordering_blocks(std::span<const double> score, std::span<const std::int64_t> row_ids, std::int64_t block_max,
                       int k) {
  require_group_size(k, "ordering blocking");
  require_block_max(block_max);
  SDC_CHECK(score.size() == row_ids.size(), "a row id per score");
  const std::size_t n = score.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(score[i]))
      throw InvalidInput("ordering blocking: the score is missing in row " + std::to_string(row_ids[i]));
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return score[a] < score[b] || (score[a] == score[b] && row_ids[a] < row_ids[b]);
  });
  const auto limit = static_cast<std::size_t>(block_max);
  std::vector<std::int32_t> raw(n, 0);
  std::vector<std::int64_t> sizes((n + limit - 1) / limit, 0);
  for (std::size_t position = 0; position < n; ++position) {
    raw[order[position]] = static_cast<std::int32_t>(position / limit);
    ++sizes[position / limit];
  }
  return from_runs(raw, sizes, k);
}

Blocks strata_blocks(std::span<const std::int32_t> stratum_of_record, int k) {
  require_group_size(k, "strata blocking");
  std::map<std::int32_t, std::int64_t> size_of_stratum;
  for (const std::int32_t stratum : stratum_of_record) ++size_of_stratum[stratum];
  std::map<std::int32_t, std::int32_t> rank;
  std::vector<std::int64_t> sizes;
  for (const auto& [stratum, size] : size_of_stratum) {
    rank[stratum] = static_cast<std::int32_t>(sizes.size());
    sizes.push_back(size);
  }
  std::vector<std::int32_t> raw(stratum_of_record.size());
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = rank[stratum_of_record[i]];
  return from_runs(raw, sizes, k);
}

Grouping microaggregate_blocks(const NumericColumns& x, const Blocks& blocks, int k,
                               const std::function<Grouping(const NumericColumns& block)>& method) {
  require_group_size(k, "blocked microaggregation");
  const std::size_t n = x.records();
  SDC_CHECK(blocks.block_of_record.size() == n, "blocks cover every record");
  const auto block_count = static_cast<std::size_t>(blocks.block_count);
  std::vector<std::vector<std::size_t>> members(block_count);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t block = blocks.block_of_record[i];
    SDC_CHECK(block >= 0 && static_cast<std::size_t>(block) < block_count, "block ids lie in 0 … block_count − 1");
    members[static_cast<std::size_t>(block)].push_back(i);
  }
  std::vector<Grouping> groupings(block_count);
  tbb::parallel_for(std::size_t{0}, block_count, [&](std::size_t b) {
    NumericData data;
    data.names = x.names;
    data.columns.resize(x.variables());
    for (std::size_t j = 0; j < x.variables(); ++j) {
      data.columns[j].reserve(members[b].size());
      for (const std::size_t i : members[b]) data.columns[j].push_back(x.columns[j][i]);
    }
    for (const std::size_t i : members[b])
      data.row_ids.push_back(x.row_ids.empty() ? static_cast<std::int64_t>(i) : x.row_ids[i]);
    groupings[b] = method(data.view());
    SDC_CHECK(groupings[b].group_of_record.size() == members[b].size(), "a block's grouping covers the block");
  });
  Grouping grouping;
  grouping.group_of_record.assign(n, 0);
  std::int32_t offset = 0;
  for (std::size_t b = 0; b < block_count; ++b) {
    for (std::size_t m = 0; m < members[b].size(); ++m) {
      grouping.group_of_record[members[b][m]] = offset + groupings[b].group_of_record[m];
    }
    offset += groupings[b].group_count;
  }
  grouping.group_count = offset;
  return grouping;
}

}  // namespace sdc::microaggregation
