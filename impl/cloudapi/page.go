package cloudapi

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Paging and keyword search, as BaseListCmd and the list searches do them.
//
// BaseListCmd (apache/cloudstack api/src/main/java/org/apache/cloudstack/api/BaseListCmd.java
// @88985fa5):
//   - page and pagesize are INTEGER parameters: a value that is not one is ParamProcessWorker's
//     "Unable to execute API command <cmd> due to invalid value <v> for parameter <name>" (431;
//     ParamProcessWorker.processParameters @60516455, the IllegalArgumentException branch);
//   - validateSpecificParameters: pagesize without page (unless pagesize is -1) and page without
//     pagesize are refused (431) before the command runs;
//   - getPageSize, when the command runs: a pagesize above the maximum (default.page.size, 500 by
//     default) and page with pagesize=-1 are InvalidParameterValueExceptions (431, cserrorcode 4350);
//   - getPageSizeVal: no pagesize means the maximum (500), -1 means no limit; getStartIndex:
//     pagesize*(page-1) for page > 0, else 0 (page is 1-based; 0 and below are the first page).
//
// The count is the number of matches before paging (searchAndCount), and the response is
// ApiResponseSerializer.toJSONSerializedString's (server/.../api/response/ApiResponseSerializer.java
// @54d9e2ef): count only when it is not 0, the items only when the page has some, so a page past the
// end is {"count":N} and no match at all is {}.

// maxPageSize is default.page.size's default (the reference server has no such key).
const maxPageSize = 500

// paging is a list command's page: start is the first index, size the most items (-1: all).
type paging struct{ start, size int }

// pageParams is validateSpecificParameters (and ParamProcessWorker's parse of the two integers):
// the page a list command was asked for, or why the request is refused before the command runs.
func (r *request) pageParams() *apiError {
	r.pg = paging{0, maxPageSize}
	var got [2]*int
	for i, name := range []string{"page", "pagesize"} {
		v := r.params[name]
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 32) // Integer.valueOf
		if err != nil {
			return &apiError{ErrParam, csErrorCodes["ServerApiException"], fmt.Sprintf("Unable to execute API command %s due to invalid value %s for parameter %s", r.cmd, v, name)}
		}
		got[i] = new(int(n))
	}
	page, size := got[0], got[1]
	switch {
	case page == nil && size != nil && *size != -1:
		return &apiError{ErrParam, csErrorCodes["ServerApiException"], `"page" parameter is required when "pagesize" is specified`}
	case size == nil && page != nil:
		return &apiError{ErrParam, csErrorCodes["ServerApiException"], `"pagesize" parameter is required when "page" is specified`}
	case size != nil && *size < -1:
		// csconform's own: CloudStack would put a negative LIMIT in its SQL
		return &apiError{ErrParam, csErrorCodes["ServerApiException"], fmt.Sprintf("Unable to execute API command %s due to invalid value %d for parameter pagesize", r.cmd, *size)}
	}
	if size != nil {
		r.pg.size = *size
	}
	if page != nil && *page > 0 && r.pg.size > 0 {
		r.pg.start = r.pg.size * (*page - 1)
	}
	r.pgPage = page
	return nil
}

// page answers a list command with one page of items (all the matches), after getPageSize's checks.
func (r *request) page(key string, items []any) (any, *apiError) {
	if r.pg.size > maxPageSize {
		return nil, &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"], fmt.Sprintf("Page size can't exceed max allowed page size value: %d", maxPageSize)}
	}
	if r.pg.size == -1 && r.pgPage != nil {
		return nil, &apiError{ErrParam, csErrorCodes["InvalidParameterValueException"], "Can't specify page parameter when pagesize is -1 (Unlimited)"}
	}
	total := len(items)
	if r.pg.size >= 0 {
		start := min(r.pg.start, total)
		items = items[start:min(start+r.pg.size, total)]
	}
	out := map[string]any{}
	if total > 0 {
		out["count"] = total
	}
	if len(items) > 0 {
		out[key] = items
	}
	return out, nil
}

// keyword is the request's keyword as SQL's LIKE '%keyword%' would match it: '%' and '_' in it are
// wildcards, as CloudStack does not escape them, and the match ignores case, as MySQL's default
// collation does. nil when there is no keyword.
func (r *request) keyword() *regexp.Regexp {
	kw := r.get("keyword")
	if kw == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("(?is)^.*")
	for _, c := range kw {
		switch c {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(".*$")
	return regexp.MustCompile(b.String())
}

// keywordMiss says whether a keyword was given and none of the values matches it.
func keywordMiss(kw *regexp.Regexp, values ...string) bool {
	if kw == nil {
		return false
	}
	for _, v := range values {
		if kw.MatchString(v) {
			return false
		}
	}
	return true
}

// pageByName is page after a keyword search on the item's name (name LIKE '%keyword%', which every
// list search of CloudStack's has; some match other columns too, such as a network's display text:
// the face matches the name only, and only listVirtualMachines' search was checked against the Java).
func (r *request) pageByName(key string, items []any) (any, *apiError) {
	if kw := r.keyword(); kw != nil {
		var kept []any
		for _, it := range items {
			if name, _ := it.(map[string]any)["name"].(string); !keywordMiss(kw, name) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	return r.page(key, items)
}
