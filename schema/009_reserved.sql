-- flydb schema, version 9: reserved for the typed data set columns
-- (schema 009 of that work); this placeholder changes nothing and is
-- replaced by the real version 9 when both are merged.
SELECT 1;
