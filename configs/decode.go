package configs

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// decode stores raw, a value from viper (YAML types from a file, strings from the
// environment and flags, Go types from defaults and zoo.cfg), into dst. It is strict
// where viper's own decoding is loose: "2 seconds" is not a duration and "yes" is not a
// bool. The error says what is allowed.
func decode(dst reflect.Value, raw any) error {
	switch {
	case dst.Type() == durationType:
		d, err := toDuration(raw)
		if err != nil {
			return err
		}
		dst.SetInt(int64(d))
	case dst.Kind() == reflect.String:
		s, err := toString(raw)
		if err != nil {
			return err
		}
		dst.SetString(s)
	case dst.Kind() == reflect.Bool:
		b, err := toBool(raw)
		if err != nil {
			return err
		}
		dst.SetBool(b)
	case dst.CanInt():
		n, err := toInt(raw)
		if err != nil || dst.OverflowInt(n) {
			return errors.New("want an integer")
		}
		dst.SetInt(n)
	default: // []string, as newSection checked
		list, err := toStrings(raw)
		if err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(list))
	}
	return nil
}

func toDuration(raw any) (time.Duration, error) {
	switch v := raw.(type) {
	case time.Duration:
		return v, nil
	case string:
		if d, err := time.ParseDuration(strings.TrimSpace(v)); err == nil {
			return d, nil
		}
	}
	return 0, errors.New("want a duration like 2s")
}

func toString(raw any) (string, error) {
	switch v := raw.(type) {
	case string:
		return v, nil
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(v), nil // YAML reads data_dir: 2024 as a number
	}
	return "", errors.New("want a string")
}

func toBool(raw any) (bool, error) {
	switch v := raw.(type) {
	case bool:
		return v, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, errors.New("want true or false")
}

func toInt(raw any) (int64, error) {
	switch v := raw.(type) {
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	}
	return 0, errors.New("not an integer")
}

// toStrings accepts a list of strings, or one comma-separated string as the
// environment and flags give it; blanks around items are dropped. An empty list is nil,
// as in the defaults: ensemble: [] is no ensemble.
func toStrings(raw any) ([]string, error) {
	switch v := raw.(type) {
	case []string:
		return v, nil
	case string:
		var list []string
		for item := range strings.SplitSeq(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = append(list, item)
			}
		}
		return list, nil
	case []any:
		if len(v) == 0 {
			return nil, nil
		}
		list := make([]string, len(v))
		for i, item := range v {
			s, ok := item.(string)
			if !ok {
				return nil, errors.New("want a list of strings")
			}
			list[i] = strings.TrimSpace(s)
		}
		return list, nil
	}
	return nil, errors.New("want a list of strings, like [ruok, srvr], or a comma-separated string")
}

// show formats a value for an error message: strings quoted, lists in brackets.
func show(raw any) string {
	switch v := raw.(type) {
	case string:
		return strconv.Quote(v)
	case nil:
		return "null"
	}
	return fmt.Sprint(raw)
}
