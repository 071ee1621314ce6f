-- flydb schema, version 5: covering indexes for the page maps.
--
-- Why: opening a paged table (src/store/pages.c) reads one record per page:
-- id, page_no, first_row, n_rows, codec, raw_bytes, checksum.  Those columns
-- share a table row with the payload, so the query touched every page of
-- the file: out of core, loading the maps was most of `flydb sample`'s
-- start-up.  From these indexes a map costs about 40 bytes a page.
CREATE INDEX page_map ON page
  (dataset_id, page_no, id, first_row, n_rows, codec, raw_bytes, checksum);
CREATE INDEX bound_page_map ON bound_page
  (bound_set_id, page_no, id, first_row, n_rows, codec, raw_bytes, checksum);
