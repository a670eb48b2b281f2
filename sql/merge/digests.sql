-- The digests of the segments of a table's rows where Pred holds: the
-- segment columns, the row count n and h, the sum of the rows' hashes (a
-- HUGEINT: exact, in any order). A row's hash is of its values, not of its
-- column names. Two different sets of rows of a segment with the same
-- digest would need the same count and the same 64-bit hash sum.
CREATE OR REPLACE {{if .Temp}}TEMP {{end}}TABLE {{.Into}} AS
SELECT {{join .Seg ", "}}, count(*) AS n, sum(hash(seg_row)) AS h FROM {{.From}} AS seg_row WHERE {{.Pred}}
GROUP BY {{join .Seg ", "}};
